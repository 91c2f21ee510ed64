"""AnchorGPU web page: server-rendered Jinja2 pages in the same app as the API (no build step).

Page routers: ``pages`` (home, sign-in), ``planning`` (planner, recommendations), ``catalog``, ``gpus``,
``booking`` (quote → book → my allocations), and the glossary area's ``glossary``. Templates extend
``templates/base.html`` (blocks ``title`` and ``content``) and are rendered with
:func:`anchorgpu.web.templating.render`, which adds the session's account, CSRF token and flash message.
"""

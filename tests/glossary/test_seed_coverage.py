"""Every concept the three seed documents define or name resolves by its English and its Russian name.

The seeds (../shared/seeds/): the AnchorGPU catalog glossary (12 terms), the ML-dictionary page on the
GPU (aliases, 22 technology connections) and the Russian GPU-cloud glossary (54 terms). The table below
is written from them by hand: (English name, Russian name, expected entry id). Search must put the
expected entry FIRST for both names.
"""

from __future__ import annotations

import pytest

from anchorgpu.glossary import search

CATALOG_GLOSSARY = [
    ("VRAM", "видеопамять", "vram"),
    ("KV cache", "KV-кэш", "kv-cache"),
    ("Quantization", "квантизация", "quantization"),
    ("Tensor parallelism", "тензорный параллелизм", "tensor-parallelism"),
    ("DistributedDataParallel (DDP)", "распределённый параллелизм по данным PyTorch", "ddp"),
    ("Fully Sharded Data Parallel (FSDP)", "полностью шардированный параллелизм по данным", "fsdp"),
    ("CUDA", "платформа CUDA", "cuda"),
    ("ROCm", "стек ROCm", "rocm"),
    ("Training checkpoint", "чекпоинт обучения", "checkpointing"),
    ("Variational autoencoder (VAE)", "вариационный автокодировщик", "vae"),
    ("Fixed rental term", "фиксированный срок аренды", "fixed-rental-term"),
    ("Idempotency key", "ключ идемпотентности", "idempotency-key"),
]

GPU_REFERENCE_PAGE = [
    ("GPU", "графический процессор", "gpu"),
    ("Graphics processing unit", "ГПУ", "gpu"),
    ("Amazon SageMaker AI", "сервис SageMaker", "sagemaker"),
    ("Apache TVM", "компилятор TVM", "apache-tvm"),
    ("Azure Machine Learning", "сервис Azure ML", "azure-ml"),
    ("CUDA", "куда", "cuda"),
    ("cuDNN", "библиотека cuDNN", "cudnn"),
    ("CUTLASS", "шаблоны CUTLASS", "cutlass"),
    ("Databricks", "платформа Databricks", "databricks"),
    ("FlashAttention", "флеш-внимание", "flashattention"),
    ("FlashInfer", "библиотека FlashInfer", "flashinfer"),
    ("Hugging Face Inference Endpoints", "эндпоинты инференса Hugging Face", "hf-inference-endpoints"),
    ("Hugging Face Inference Providers", "провайдеры инференса Hugging Face", "hf-inference-providers"),
    ("IREE", "компилятор IREE", "iree"),
    ("Kubeflow", "платформа Kubeflow", "kubeflow"),
    ("Modal", "платформа Modal", "modal"),
    ("NCCL", "никель", "nccl"),
    ("OpenXLA", "компилятор XLA", "openxla"),
    ("ROCm", "платформа ROCm", "rocm"),
    ("Runpod", "платформа Runpod", "runpod"),
    ("SkyPilot", "инструмент SkyPilot", "skypilot"),
    ("Slurm", "планировщик Slurm", "slurm"),
    ("torch.compile", "компиляция PyTorch", "torch-compile"),
    ("Triton GPU language", "язык Triton", "triton"),
    ("PyTorch Fully Sharded Data Parallel", "шардированный параллелизм по данным", "fsdp"),
    ("vLLM", "движок vLLM", "vllm"),
]

RUSSIAN_GLOSSARY = [
    ("AI TOPS", "триллионы операций в секунду", "ai-tops"),
    ("All-reduce", "коллективное суммирование", "all-reduce"),
    ("Bare metal", "физический сервер", "bare-metal"),
    ("BF16", "формат bfloat16", "bf16"),
    ("Blackwell", "архитектура Blackwell", "blackwell"),
    ("CUDA", "платформа CUDA", "cuda"),
    ("CUDA cores", "ядра CUDA", "cuda-cores"),
    ("Data parallelism", "параллелизм по данным", "data-parallelism"),
    ("DCGM", "менеджер GPU для дата-центров", "dcgm"),
    ("DDoS protection", "защита от DDoS", "ddos-protection"),
    ("Egress", "исходящий трафик", "egress"),
    ("Expert parallelism", "параллелизм экспертов", "expert-parallelism"),
    ("FP4", "4-битный формат с плавающей запятой", "fp4"),
    ("FP8", "8-битный формат с плавающей запятой", "fp8"),
    ("FP64", "двойная точность", "fp64"),
    ("FSDP", "шардированный параллелизм по данным", "fsdp"),
    ("GDDR7", "память GDDR7", "gddr7"),
    ("GPU passthrough", "проброс GPU", "gpu-passthrough"),
    ("GPU-hour", "GPU-час", "gpu-hour"),
    ("HBM3e", "память HBM3e", "hbm3e"),
    ("HBM4", "память HBM4", "hbm4"),
    ("HGX", "платформа HGX", "hgx"),
    ("Hopper", "архитектура Hopper", "hopper"),
    ("InfiniBand", "сеть InfiniBand", "infiniband"),
    ("Infinity Fabric", "интерконнект Infinity Fabric", "infinity-fabric"),
    ("KV cache", "кэш ключей и значений", "kv-cache"),
    ("LoRA", "низкоранговая адаптация", "lora"),
    ("Memory bandwidth", "пропускная способность памяти", "memory-bandwidth"),
    ("MIG", "многоэкземплярный GPU", "mig"),
    ("Mixed precision", "смешанная точность", "mixed-precision"),
    ("MoE", "смесь экспертов", "moe"),
    ("NCCL", "библиотека NCCL", "nccl"),
    ("NVL72", "стойка NVL72", "nvl72"),
    ("NVLink", "интерконнект NVLink", "nvlink"),
    ("NVSwitch", "коммутатор NVSwitch", "nvswitch"),
    ("OAM", "модуль OAM", "oam"),
    ("PCIe Gen5", "шина PCIe", "pcie-gen5"),
    ("Pipeline parallelism", "конвейерный параллелизм", "pipeline-parallelism"),
    ("QLoRA", "квантованная LoRA", "qlora"),
    ("Quantization", "квантование", "quantization"),
    ("RDMA", "удалённый прямой доступ к памяти", "rdma"),
    ("RoCE", "RDMA поверх Ethernet", "roce"),
    ("ROCm", "стек ROCm", "rocm"),
    ("SXM", "модуль SXM", "sxm"),
    ("TDP", "расчётная тепловая мощность", "tdp"),
    ("Tensor cores", "тензорные ядра", "tensor-cores"),
    ("Tensor parallelism", "тензорный параллелизм", "tensor-parallelism"),
    ("TFLOPS / PFLOPS", "терафлопс", "tflops"),
    ("Time-slicing", "разделение по времени", "time-slicing"),
    ("Token throughput", "токены в секунду", "token-throughput"),
    ("vGPU", "виртуальный GPU", "vgpu"),
    ("vLLM", "движок vLLM", "vllm"),
    ("VRAM", "видеопамять", "vram"),
    ("ZeRO", "оптимизатор без избыточности", "zero"),
    # named inside the Russian definitions
    ("Continuous batching", "непрерывный батчинг", "continuous-batching"),
    ("PagedAttention", "страничное внимание", "paged-attention"),
    ("RCCL", "библиотека RCCL", "rccl"),
    ("NVFP4", "формат NVFP4", "nvfp4"),
    ("MXFP4", "формат MXFP4", "mxfp4"),
    ("NF4", "формат NormalFloat", "nf4"),
    ("GPTQ", "квантизация GPTQ", "gptq"),
    ("AWQ", "квантизация AWQ", "awq"),
    ("INT8", "8-битные целые", "int8"),
    ("Structured sparsity", "разреженность", "sparsity"),
    ("Transformer Engine", "библиотека Transformer Engine", "transformer-engine"),
    ("Matrix Cores", "матричные ядра", "tensor-cores"),
    ("Loss scaling", "масштабирование функции потерь", "loss-scaling"),
    ("ZeRO-Offload", "выгрузка на CPU", "offloading"),
    ("DeepSpeed", "библиотека DeepSpeed", "deepspeed"),
    ("Rubin", "архитектура Rubin", "rubin"),
    ("Ada Lovelace", "архитектура Ada", "ada-lovelace"),
    ("Prometheus", "система мониторинга Prometheus", "prometheus"),
    ("GPUDirect RDMA", "удалённый прямой доступ к памяти", "rdma"),
    ("Pipeline bubble", "пузырь конвейера", "pipeline-parallelism"),
    ("Fine-tuning", "дообучение", "fine-tuning"),
    ("HBM", "память с высокой пропускной способностью", "hbm"),
]

PLANNER_AND_PRODUCT = [
    ("GQA", "групповое внимание", "gqa"),
    ("MLA", "латентное внимание", "mla"),
    ("Sliding window", "скользящее окно", "sliding-window"),
    ("Activation recomputation", "пересчёт активаций", "activation-recomputation"),
    ("Gradient checkpointing", "градиентный чекпоинтинг", "activation-recomputation"),
    ("GGUF", "формат GGUF", "gguf"),
    ("gpu_memory_utilization", "доля памяти GPU", "gpu-memory-utilization"),
    ("MFU", "коэффициент использования FLOPS", "mfu"),
    ("MBU", "коэффициент использования пропускной способности", "mbu"),
    ("Roofline", "арифметическая интенсивность", "roofline"),
    ("Prefill", "обработка запроса", "prefill"),
    ("Decode", "генерация токенов", "decode"),
    ("Sequence parallelism", "параллелизм по последовательности", "sequence-parallelism"),
    ("Optimizer state", "состояние оптимизатора", "optimizer-state"),
    ("Micro-batch", "микробатч", "micro-batch"),
    ("Context window", "длина контекста", "context-window"),
    ("730-hour comparison month", "730 часов", "comparison-month-730"),
    ("Quote", "расчёт стоимости", "quote"),
    ("Allocation", "аренда", "allocation"),
    ("Stop does not pause", "остановка аренды", "stop-does-not-pause"),
    ("Whole GPUs only", "только целые GPU", "whole-gpus-only"),
    ("Included egress", "включённый исходящий трафик", "included-egress"),
    ("Offering", "предложение каталога", "offering"),
    ("API key", "ключ API", "api-key"),
    ("Megatron-LM", "фреймворк Megatron", "megatron-lm"),
    ("TensorRT-LLM", "движок TensorRT-LLM", "tensorrt-llm"),
    ("bitsandbytes", "библиотека bitsandbytes", "bitsandbytes"),
    ("llama.cpp", "движок llama.cpp", "llama-cpp"),
    ("Kubernetes", "кубернетес", "kubernetes"),
    ("Time to first token", "время до первого токена", "time-to-first-token"),
]

TABLE = CATALOG_GLOSSARY + GPU_REFERENCE_PAGE + RUSSIAN_GLOSSARY + PLANNER_AND_PRODUCT


def _first(query: str, lang: str) -> str:
    hits = search(query, "ru" if lang == "ru" else "en")
    assert hits, f"nothing found for {query!r}"
    return hits[0].entry.id


@pytest.mark.parametrize(("english", "russian", "entry_id"), TABLE, ids=[f"{row[2]}:{row[0]}" for row in TABLE])
def test_each_seed_concept_resolves_first_by_its_english_and_its_russian_name(english: str, russian: str, entry_id: str) -> None:
    assert _first(english, "en") == entry_id
    assert _first(russian, "ru") == entry_id


def test_the_russian_names_in_the_table_really_are_russian() -> None:
    latin_only = [ru for _, ru, _ in TABLE if not any("а" <= ch.lower() <= "я" or ch in "ёЁ" for ch in ru) and ru not in {"GPU-час"}]
    assert latin_only == []


def test_the_table_covers_all_54_terms_of_the_russian_glossary_and_the_12_of_the_catalog_glossary() -> None:
    # counts read off the seed documents: 54 definitions in the Russian glossary, 12 in the catalog glossary
    assert len({row[2] for row in RUSSIAN_GLOSSARY[:54]}) == 54
    assert len({row[2] for row in CATALOG_GLOSSARY}) == 12


# The 22 "technology connections" of the GPU reference page, in its order.
GPU_PAGE_TECHNOLOGIES = [
    "sagemaker", "apache-tvm", "azure-ml", "cuda", "cudnn", "cutlass", "databricks", "flashattention", "flashinfer",
    "hf-inference-endpoints", "hf-inference-providers", "iree", "kubeflow", "modal", "nccl", "openxla", "rocm", "runpod",
    "skypilot", "slurm", "torch-compile", "triton",
]


def test_the_gpu_entry_keeps_every_technology_connection_of_the_reference_page_as_a_technology_entry() -> None:
    from anchorgpu.glossary import get_entry

    gpu = get_entry("gpu")
    assert len(GPU_PAGE_TECHNOLOGIES) == 22
    assert list(gpu.technologies) == GPU_PAGE_TECHNOLOGIES
    assert {get_entry(t).kind for t in GPU_PAGE_TECHNOLOGIES} == {"technology"}
    # the page's level, stages and tags carried over
    assert gpu.level == "foundational"
    assert set(gpu.stages) == {"training", "inference", "deployment"}
    assert {"dl", "llm", "slm", "systems"} <= set(gpu.tags)

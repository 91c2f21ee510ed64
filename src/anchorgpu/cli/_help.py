"""Help texts of the options ``plan`` and ``recommend`` share, written once so the two commands describe the same
option the same way."""

from __future__ import annotations

CONTEXT = "Tokens per sequence (inference only; training's is --seq), e.g. 8192 or 8k."
OPTIMIZER = "Training only: adamw | adamw-8bit | sgd | lion | adafactor (default adamw)"
LORA_RANK = "LoRA rank r (task lora or qlora only; default 16)."
TRAIN_STACK = ("Training only: the training software the plan is for (speed and memory): megatron (Megatron-Core/NeMo, "
               "fused kernels) | pytorch (torchtitan, FSDP scripts, OLMo-core, llm-foundry); default pytorch with "
               "--task qlora or --recipe torchrun-fsdp, deepspeed or accelerate, else megatron.")
MFU = ("Override the calibrated matrix-product efficiency, a fraction of the dense peak (0-1; default: the "
       "calibration's, per GPU stack and shape).")
MBU = ("Override the calibrated share of memory bandwidth decode reaches (0-1; default: the calibration's, per GPU "
       "stack).")
GPU_MEMORY_UTILIZATION = ("Inference only: the serving engine's share of GPU memory (vLLM; default 0.9); with --engine "
                          "trtllm the share of the memory free after the weights and profiling that the KV cache "
                          "takes (free_gpu_memory_fraction).")
ENGINE = ("Inference only: the serving engine the memory and admission are sized for: vllm | trtllm (trtllm-serve's KV "
          "sizing, 8,192 tokens and 2,048 sequences, requests admitted only when prompt + output fit) | sglang (its "
          "mem_fraction_static, derived from the GPU's memory and the layout unless --gpu-memory-utilization gives it, "
          "holds the weights and a one-token-slot KV pool; chunked prefill and CUDA graphs by GPU memory); default "
          "the engine of --recipe trtllm or sglang, else vllm. A serving --recipe must be the engine's own.")
MAX_NUM_SEQS = ("Inference only: engine sequence cap, vLLM's max_num_seqs (default 1,024 on GPUs of 70 GiB or more but "
                "the A100, else 256): a serving replica runs at most this many at once.")
ALLOW_LONG_CONTEXT = "Allow a context beyond the model's limit."
OFFLINE = "Never fetch a Hub id."
IMAGES_PER_REQUEST = "Images in each request to a vision-language model (default 1 there; refused for text-only models)."
IMAGE_RESOLUTION = "Image WIDTHxHEIGHT in pixels (default: the model's native resolution)."
NETWORK_GBIT_PER_GPU = ("Training only: server-to-server bandwidth each GPU has, in Gb/s (gigabits a second), one "
                        "direction, that a layout spanning servers is timed at (e.g. 8 NICs of 400 Gb/s for 8 GPUs: "
                        "400; 100 Gb/s shared by 8 GPUs: 12.5); default the calibration's 400. recommend times a "
                        "multi-server row at its offering's own and says which.")

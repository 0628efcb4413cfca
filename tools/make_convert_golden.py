#!/usr/bin/env python3
"""Tiny Hugging Face checkpoints, and what transformers and llama.cpp's own
converter make of them, for tests/convert_golden_test.cpp (which holds
`omnibus convert` to both).

For each architecture ARCH (llama, qwen2, qwen3, qwen2moe, qwen3moe, phi3, gptoss,
gptoss_mxfp4, gemma3, gemma3mm, llama_spm, mistral, llama_hfspm, phi3_spm) it writes tests/golden/convert/ARCH/:
  config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
  chat_template.jinja, tokenizer.model (gemma3, gemma3mm, llama_spm,
  phi3_spm), added_tokens.json (gemma3mm, phi3_spm), ...
               the checkpoint, written by transformers'
               save_pretrained: random weights (scaled so the model is
               confident) in a different source dtype per architecture
               (llama bf16 with llama3 RoPE scaling, qwen2 f16 with biases
               and tied embeddings, qwen3 f32 with q/k norms and a head
               dimension apart from hidden / heads, qwen2moe bf16 with a
               shared expert, qwen3moe f16 with normalised routing: 4
               experts, 2 per token, phi3 bf16 with fused tensors, partial
               rotation and longrope, gptoss bf16: gpt-oss-20b's
               layout (sinks, alternating window layers, YaRN, 4
               experts with biases stored fused as transformers 5 writes
               them, a decisive router), gptoss_mxfp4: the same with the
               experts' matrices as MXFP4 blocks and scales drawn at
               random, as published (quantization_config mxfp4),
               gemma3 bf16: Gemma 3 text
               (Gemma3ForCausalLM, model_type gemma3_text) with 6 layers,
               5 sliding-window (window 16) and 1 global, local RoPE
               base, q/k norms, (1 + w) norms, tied embeddings,
               gemma3mm f16: gemma-3-4b-it's multimodal layout
               (Gemma3ForConditionalGeneration, model_type gemma3) with
               the same language model under text_config, linear RoPE
               scaling (factor 8) on its full-attention layer, a
               1-layer SigLIP vision tower and the projector, the
               published tensor names (language_model.model.*,
               vision_tower.vision_model.*, multi_modal_projector.*) and
               eos_token_id [1, 6] at the top level,
               llama_spm f16: Llama 2 / Mistral 7B v0.1 style,
               mistral bf16: Mistral 7B v0.1's layout, every layer
               a window of 16 positions,
               llama_hfspm: the same as llama_spm without its tokenizer.model
               (tokenizer.json alone, as transformers 5 saves it),
               phi3_spm f32: Phi-3-mini-4k's layout: fused tensors,
               full rotation, no RoPE scaling (config.json as published:
               rope_scaling null, rope_theta at the top level), a
               sliding window (255, longer than the sequences), untied
               embeddings), and a
               byte-level BPE tokenizer trained here by `tokenizers` with
               the real model's pre-tokenizer regex and special tokens;
               gemma3, gemma3mm, llama_spm and phi3_spm instead have a
               SentencePiece BPE tokenizer.model with byte fallback (400
               pieces; the model
               has 416 rows) trained here by `sentencepiece` with the real
               model's special tokens (gemma3: <pad>=0 <eos>=1 <bos>=2
               <unk>=3 <mask>=4 <start_of_turn>=5 <end_of_turn>=6, no dummy
               prefix; gemma3mm adds <start_of_image>=7 <end_of_image>=8
               as pieces and <image_soft_token>=400 as an added token after
               the last piece, the image token ids of its config;
               llama_spm: <unk>=0 <s>=1 </s>=2, dummy prefix; phi3_spm:
               the same pieces, no BOS added, and Phi-3's added tokens
               after the last piece, as in its tokenizer_config.json and
               added_tokens.json: <|endoftext|>=400 (special, eos and
               pad), <|assistant|>=401 <|placeholder1|>=402
               <|system|>=404 <|end|>=405 <|user|>=406 (special, rstrip),
               <|placeholder2|>=403 (rstrip, made non-special here), and
               </s> non-special with rstrip as published), and
               transformers' GemmaTokenizer / LlamaTokenizer converted from
               it (tokenizer.json; tokenizer_config.json with add_bos_token
               and added_tokens_decoder, as published checkpoints have).
  golden.json  transformers' token ids for probe texts (special tokens
               included), the teacher-forced sequences, and
               llama_cpp_convert: what llama.cpp's convert_hf_to_gguf.py
               writes for the same folder (--outtype f16): each tensor's
               name, shape, type and sha256, and its metadata values
               (an array of more than 16 by the sha256 of its elements
               joined by newlines).
  logits.f16   transformers' float32 logits (eager attention) at every
               teacher-forced position, float16 little-endian,
               positions x vocab (gemma3mm: Gemma3ForConditionalGeneration
               on the token ids alone, no image; gptoss*: YaRN with
               truncate true, as llama.cpp runs it, golden.json's
               reference_note; gptoss_mxfp4: the decoded weights, and
               golden.json's int8_activation_error, what rounding the
               experts' inputs as ggml's MXFP4 dot product does alone
               moves those logits by).

llama.cpp's converter names the pre-tokenizer by hashing the ids of a probe
text, which knows only published tokenizers; for these tiny ones the script
tells it the name of the real model's pre-tokenizer (the regex is the real
one). For a tokenizer.model it reads the SentencePiece model itself and
writes tokenizer.ggml.model "llama" and pre "default", so nothing is told.
For gemma3mm it converts the language model only (no --mmproj).

Needs torch, transformers, tokenizers, safetensors, sentencepiece, protobuf
(pip) and llama.cpp's source (bench/build_llama_server.sh unpacks it). The
PyPI torch wheel is built for CUDA: on a machine without the NVIDIA
libraries, install it with --no-deps plus nvidia-nccl-cu13 (the version
torch names: an older libnccl lacks symbols), nvidia-cusparselt-cu13,
nvidia-nvshmem-cu13 and nvidia-cufile, and put their lib folders, the CUDA
toolkit's and a libcuda.so.1 stub on LD_LIBRARY_PATH.

Usage:
  python3 tools/make_convert_golden.py \\
      --llama-cpp /tmp/llama-build/llama_cpp_python-0.3.36/vendor/llama.cpp [ARCH...]
"""

import argparse
import copy
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = REPO_ROOT / "tests" / "golden" / "convert"
TEXTS = REPO_ROOT / "tools" / "golden_texts"
SEQUENCES = 2
SEQUENCE_TOKENS = 104  # 208 teacher-forced positions
VOCAB = 320            # the model's rows; the tokenizer has fewer, so the file is padded
TRAINED_VOCAB = 300
SPM_VOCAB = 400        # a SentencePiece model with byte fallback: 256 byte pieces, specials, ~80 characters, merges
SPM_MODEL_VOCAB = 416

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

O200K_SPLIT = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
               r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
               r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5)
# Gemma 3 text (gemma-3-270m / 1b): sliding-window layers, 5 of each 6 (the pattern llama.cpp assumes, as its
# converter writes none), local RoPE base, q/k norms, RMSNorm weights stored as w with (1 + w) applied,
# embeddings scaled by sqrt(hidden), GeGLU, head_dim apart from hidden / heads, query_pre_attn_scalar = head_dim
# (llama.cpp keeps no key for it and scales by 1/sqrt(head_dim)), tied embeddings, no softcapping.
GEMMA3_TEXT = dict(COMMON, vocab_size=SPM_MODEL_VOCAB, tie_word_embeddings=True, num_hidden_layers=6,
                   num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32, rms_norm_eps=1e-6,
                   hidden_activation="gelu_pytorch_tanh", sliding_window=16,
                   layer_types=["sliding_attention"] * 5 + ["full_attention"],
                   rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
GEMMA3_SPM = dict(add_dummy_prefix=False, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
                  bos_piece="<bos>", unk_piece="<unk>", control_symbols=["<mask>"],
                  user_defined_symbols=["<start_of_turn>", "<end_of_turn>"])
GEMMA3_PROBES = ["<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n", "<bos>x<eos> <pad><unk><mask>"]
GEMMA3_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<start_of_turn>"
                   "{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n{{ m['content'] }}<end_of_turn>\n"
                   "{% endfor %}<start_of_turn>model\n")

GPT_OSS_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|return|>", "<|start|>", "<|message|>", "<|channel|>",
                    "<|end|>", "<|call|>", "<|constrain|>"]
GPT_OSS_TEMPLATE = ("{% for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|end|>{% endfor %}"
                    "<|start|>assistant")
# transformers' FP4_VALUES (E2M1, the code's index): MXFP4's elements.
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]

ARCHS = {
    "llama": dict(
        config=dict(COMMON, model_type="llama", tie_word_embeddings=False, rope_theta=10000.0,
                    rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
        dtype="bfloat16", split=LLAMA3_SPLIT, pre="llama-bpe",
        specials=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eot_id|>"],
        bos="<|begin_of_text|>", eos="<|eot_id|>", add_bos=True,
        template="{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
                 "{{ m['content'] }}<|eot_id|>{% endfor %}"),
    "qwen2": dict(
        config=dict(COMMON, model_type="qwen2", tie_word_embeddings=True, rope_theta=1000000.0),
        dtype="float16", split=QWEN2_SPLIT, pre="qwen2",
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos=None, eos="<|im_end|>", add_bos=False,
        template="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"),
    "qwen3": dict(
        config=dict(COMMON, model_type="qwen3", tie_word_embeddings=True, rope_theta=1000000.0, head_dim=32),
        dtype="float32", split=QWEN2_SPLIT, pre="qwen2",
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], user_defined=["<think>", "</think>"],
        bos=None, eos="<|im_end|>", add_bos=False,
        template="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"),
    "qwen2moe": dict(
        config=dict(COMMON, model_type="qwen2_moe", tie_word_embeddings=False, rope_theta=1000000.0,
                    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                    shared_expert_intermediate_size=64, norm_topk_prob=False, decoder_sparse_step=1,
                    mlp_only_layers=[]),
        dtype="bfloat16", split=QWEN2_SPLIT, pre="qwen2",
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos=None, eos="<|im_end|>", add_bos=False,
        template="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"),
    "qwen3moe": dict(
        config=dict(COMMON, model_type="qwen3_moe", tie_word_embeddings=False, rope_theta=1000000.0, head_dim=16,
                    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                    decoder_sparse_step=1, mlp_only_layers=[]),
        dtype="float16", split=QWEN2_SPLIT, pre="qwen2",
        specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        bos=None, eos="<|im_end|>", add_bos=False,
        template="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"),
    # Phi-4-mini's layout: fused q/k/v and gate/up, 3/4 of each head rotated,
    # longrope (long factors, as the context of 512 is past the original 64),
    # the o200k pre-tokenizer; its tokenizer_config names GPT2Tokenizer.
    "phi3": dict(
        config=dict(COMMON, model_type="phi3", tie_word_embeddings=True, rope_theta=10000.0, pad_token_id=None,
                    partial_rotary_factor=0.75, original_max_position_embeddings=64,
                    rope_scaling={"rope_type": "longrope", "long_factor": [1.0, 1.5, 2.0, 3.0, 5.0, 8.0],
                                  "short_factor": [1.0, 1.0, 1.1, 1.2, 1.4, 1.6]}),
        dtype="bfloat16", split=O200K_SPLIT, pre="gpt-4o",
        specials=["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"],
        bos="<|endoftext|>", eos="<|endoftext|>", add_bos=False, tokenizer_class="GPT2Tokenizer",
        template="{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}<|assistant|>"),
    # gpt-oss-20b's layout (GptOssForCausalLM): biased q/k/v/o, attention sinks, window layers (16 positions) and
    # full ones alternating, YaRN (transformers' defaults: factor 32 over 4,096 positions, truncate false), 4 experts
    # with biases, 2 a token, the clamped SwiGLU, the o200k pre-tokenizer and harmony's special tokens. The
    # experts as transformers 5 writes them: one tensor a matrix per layer (gate_up_proj [experts, hidden, 2 x ff],
    # gate and up interleaved column by column; down_proj [experts, ff, hidden]), bf16.
    "gptoss": dict(
        config=dict(COMMON, model_type="gpt_oss", tie_word_embeddings=False, num_hidden_layers=4, head_dim=16,
                    intermediate_size=32, num_local_experts=4, num_experts_per_tok=2, sliding_window=16,
                    layer_types=["sliding_attention", "full_attention"] * 2, max_position_embeddings=4096),
        dtype="bfloat16", split=O200K_SPLIT, pre="gpt-4o",
        specials=GPT_OSS_SPECIALS, bos="<|startoftext|>", eos="<|return|>", add_bos=False,
        template=GPT_OSS_TEMPLATE),
    # The same layout as published (openai/gpt-oss-20b): the experts' matrices in MXFP4, *_blocks [experts, rows,
    # columns / 32, 16] (two 4-bit codes a byte, the even column's in the low nibble) and *_scales [experts, rows,
    # columns / 32] (E8M0), rows output-major, and config.json's quantization_config naming mxfp4. The codes and
    # scales are drawn at random; transformers' logits are those of the same model with them dequantized.
    "gptoss_mxfp4": dict(
        config=dict(COMMON, model_type="gpt_oss", tie_word_embeddings=False, num_hidden_layers=4, head_dim=16,
                    intermediate_size=32, num_local_experts=4, num_experts_per_tok=2, sliding_window=16,
                    layer_types=["sliding_attention", "full_attention"] * 2, max_position_embeddings=4096),
        dtype="bfloat16", split=O200K_SPLIT, pre="gpt-4o", mxfp4=True,
        specials=GPT_OSS_SPECIALS, bos="<|startoftext|>", eos="<|return|>", add_bos=False,
        template=GPT_OSS_TEMPLATE),
    # The ones below have a SentencePiece tokenizer.model (BPE, byte fallback), as the published checkpoints do:
    # llama.cpp's converter reads it (not tokenizer.json) and names the tokenizer "llama", pre "default" itself.
    # Gemma 3 text: GEMMA3_TEXT above.
    "gemma3": dict(
        config=dict(GEMMA3_TEXT, model_type="gemma3_text"),
        dtype="bfloat16", pre=None, norm_center=0.0,  # Gemma's norms apply 1 + w
        spm=GEMMA3_SPM, tokenizer_class="GemmaTokenizer", special_added=["<start_of_turn>", "<end_of_turn>"],
        add_bos=True, probes=GEMMA3_PROBES, template=GEMMA3_TEMPLATE),
    # Gemma 3 multimodal (gemma-3-4b-it's layout): Gemma3ForConditionalGeneration, model_type gemma3, the language
    # model above under text_config (linear RoPE scaling, factor 8, on the full-attention layers, as the 4B has) and
    # a SigLIP vision tower (56 x 56 images of 14 x 14 patches, pooled 2 x 2 into 4 tokens) with the projector under
    # vision_config. The tensors keep the published names: language_model.model.*, vision_tower.vision_model.*,
    # multi_modal_projector.* (transformers 5 writes vision_tower.* without vision_model.; it reads both).
    # <start_of_image> / <end_of_image> are pieces of tokenizer.model, <image_soft_token> an added token after its
    # last piece (also in added_tokens.json), as in the published tokenizer; eos_token_id is [<eos>, <end_of_turn>]
    # at the top level of config.json, as published; text_config keeps one id each (transformers 5 writes them).
    # llama.cpp converts the language model only (its vision and projector tensors go to --mmproj, not run here).
    "gemma3mm": dict(
        config=dict(model_type="gemma3", mm_tokens_per_image=4, boi_token_index=7, eoi_token_index=8,
                    image_token_index=SPM_VOCAB, eos_token_id=[1, 6], tie_word_embeddings=True,
                    text_config=dict(GEMMA3_TEXT, rope_parameters={
                        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
                    vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64,
                                       num_hidden_layers=1, num_attention_heads=2, image_size=56, patch_size=14,
                                       vision_use_head=False)),
        model_class="Gemma3ForConditionalGeneration", tensor_renames=[("vision_tower.", "vision_tower.vision_model.")],
        dtype="float16", pre=None, norm_center=0.0,
        spm=dict(GEMMA3_SPM, user_defined_symbols=GEMMA3_SPM["user_defined_symbols"] + ["<start_of_image>",
                                                                                      "<end_of_image>"]),
        tokenizer_class="GemmaTokenizer",
        special_added=["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>"],
        added_special=["<image_soft_token>"], added_tokens_json=True,
        tokenizer_config_extra={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                "image_token": "<image_soft_token>"},
        add_bos=True,
        probes=GEMMA3_PROBES + ["<start_of_image><image_soft_token><image_soft_token><end_of_image>\n",
                                "a<image_soft_token>b <start_of_image> x"],
        template=GEMMA3_TEMPLATE),
    # Llama 2 / Mistral 7B v0.1: <unk>=0 <s>=1 </s>=2, a dummy prefix space, no RoPE scaling.
    "llama_spm": dict(
        config=dict(COMMON, vocab_size=SPM_MODEL_VOCAB, model_type="llama", tie_word_embeddings=False,
                    rope_theta=10000.0),
        dtype="float16", pre=None,
        spm=dict(add_dummy_prefix=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
        tokenizer_class="LlamaTokenizer", add_bos=True,
        probes=["[INST] hi [/INST] ok</s>", "<s> x</s><unk>"],
        template="{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token }}[INST] {{ m['content'] }} "
                 "[/INST]{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"),
    # Mistral 7B v0.1's layout: model_type mistral (llama in GGUF), every layer a sliding window (16 positions here,
    # shorter than the sequences), its SentencePiece tokenizer. llama.cpp's converter writes no window (and its
    # llama runs every layer over the whole context); omnibus writes llama.attention.sliding_window and runs it, as
    # transformers does (departures).
    "mistral": dict(
        config=dict(COMMON, vocab_size=SPM_MODEL_VOCAB, model_type="mistral", tie_word_embeddings=False,
                    rope_theta=10000.0, sliding_window=16),
        dtype="bfloat16", pre=None,
        spm=dict(add_dummy_prefix=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
        tokenizer_class="LlamaTokenizer", add_bos=True,
        departures={"llama.attention.sliding_window": "written (llama.cpp's converter leaves Mistral's window out)"},
        probes=["[INST] hi [/INST] ok</s>", "<s> x</s><unk>"],
        template="{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token }}[INST] {{ m['content'] }} "
                 "[/INST]{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"),
    # The same checkpoint saved without its tokenizer.model, as transformers 5 saves a SentencePiece tokenizer:
    # tokenizer.json alone (BPE with byte fallback, a Metaspace pre-tokenizer). llama.cpp's converter then reads
    # it through transformers (_set_vocab_llama_hf), scoring every token -1000 and writing 400 tokens for the 416
    # rows; omnibus scores by merge rank and pads (src/convert/hf_spm_json.cpp). The reference ids are llama.cpp's
    # from the tokenizer.model conversion (llama_cpp_ids); llama.cpp's own from this folder are kept beside them
    # (llama_cpp_hf_ids), as are the keys omnibus writes otherwise on purpose (departures).
    "llama_hfspm": dict(
        config=dict(COMMON, vocab_size=SPM_MODEL_VOCAB, model_type="llama", tie_word_embeddings=False,
                    rope_theta=10000.0),
        dtype="float16", pre=None,
        spm=dict(add_dummy_prefix=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
        tokenizer_class="LlamaTokenizer", add_bos=True, drop_tokenizer_model=True,
        departures={"tokenizer.ggml.tokens": "padded with [PADn] to the embedding's 416 rows (llama.cpp's 400 "
                                              "tokens do not load)",
                    "tokenizer.ggml.scores": "minus the rank of the merge making each token (llama.cpp: -1000 for "
                                              "all, which merges leftmost first)",
                    "tokenizer.ggml.token_type": "the pads' type"},
        probes=["[INST] hi [/INST] ok</s>", "<s> x</s><unk>"],
        template="{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token }}[INST] {{ m['content'] }} "
                 "[/INST]{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"),
    # Phi-3-mini-4k-instruct's layout: Phi3ForCausalLM with fused q/k/v and gate/up, every head dimension rotated,
    # no RoPE scaling, a sliding window (2047 of 4096 there; llama.cpp writes it but runs Phi-3 without one; the
    # sequences here are shorter than it), untied embeddings, f32. config.json in the published (transformers 4)
    # shape: rope_scaling null and rope_theta at the top level, no rope_parameters. Its tokenizer: a SentencePiece
    # tokenizer.model (<unk>=0 <s>=1 </s>=2, dummy prefix) saved as LlamaTokenizer, not adding <s>, with Phi-3's
    # added tokens after the last piece (also in added_tokens.json): <|endoftext|> (eos and pad) and the chat
    # tokens, special and rstrip as published, </s> non-special and rstrip as published, and <|placeholder2|>
    # made non-special here (published: special) so that llama.cpp's Phi-3 rule (special: CONTROL, else
    # USER_DEFINED, without the "looks special" guess) types one USER_DEFINED. llama.cpp's Phi3MiniModel reads
    # tokenizer.model, added_tokens.json, tokenizer_config.json's added_tokens_decoder and tokenizer.json's
    # added_tokens itself; llama.cpp's tokenizer strips the space after the special tokens of a model whose
    # general.name has "phi3" in it (the folder's name here).
    "phi3_spm": dict(
        config=dict(COMMON, vocab_size=SPM_MODEL_VOCAB, model_type="phi3", tie_word_embeddings=False,
                    rope_theta=10000.0, rope_scaling=None, partial_rotary_factor=1.0, pad_token_id=SPM_VOCAB,
                    original_max_position_embeddings=512, sliding_window=255),
        config_json=dict(drop=["rope_parameters", "partial_rotary_factor"], set={"rope_scaling": None,
                                                                              "rope_theta": 10000.0}),
        dtype="float32", pre=None,
        spm=dict(add_dummy_prefix=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
        tokenizer_class="LlamaTokenizer", add_bos=False,
        added=[("<|endoftext|>", True, False), ("<|assistant|>", True, True), ("<|placeholder1|>", True, True),
               ("<|placeholder2|>", False, True), ("<|system|>", True, True), ("<|end|>", True, True),
               ("<|user|>", True, True)],
        added_flags={"</s>": dict(special=False, rstrip=True)},
        eos="<|endoftext|>", pad="<|endoftext|>", added_tokens_json=True,
        tokenizer_config_extra={"legacy": False},
        probes=["<|system|>\nbe brief<|end|>\n<|user|>\nhi<|end|>\n<|assistant|>\nok<|end|>\n<|endoftext|>",
                "<s> x</s> y<unk> <|endoftext|> z",
                "a<|placeholder2|> b <|placeholder2|>\n c<|placeholder1|>  d",
                "<|user|>   spaces<|end|>\t\ttabs<|assistant|>"],
        template="{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% else %}{{ eos_token }}{% endif %}"),
}

PROBES = [
    "Hello world",
    " leading space and  two  spaces",
    "numbers 1 22 333 4444 55555 3.14159",
    "I'll say it's 'RE' and you've DONE",
    "tabs\tand\nnew\n\nlines\r\n end",
    "unicode: café, naïve, 日本語, привет, 🚀🦙",
    "<|im_start|>user\nhi<|im_end|>",
    "<|start_header_id|>system<|end_header_id|>\n\nbe brief<|eot_id|>",
    "<think>reasoning</think> answer",
    "   ",
    "",
    "x" * 40,
]


def corpus():
    return [p.read_text(encoding="utf-8") for p in sorted(TEXTS.glob("*.txt"))]


def make_tokenizer(spec, texts, out):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["split"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TRAINED_VOCAB, special_tokens=spec["specials"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    if spec.get("user_defined"):
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in spec["user_defined"]])
    if spec["add_bos"]:
        bos_id = tok.token_to_id(spec["bos"])
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{spec['bos']} $A", pair=f"{spec['bos']} $A {spec['bos']} $B",
                                          special_tokens=[(spec["bos"], bos_id)])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=spec["bos"], eos_token=spec["eos"])
    fast.chat_template = spec["template"]
    fast.save_pretrained(out)
    if spec.get("tokenizer_class"):  # what llama.cpp's converter reads to pick the BPE path
        config_path = Path(out) / "tokenizer_config.json"
        config = json.loads(config_path.read_text())
        config["tokenizer_class"] = spec["tokenizer_class"]
        config_path.write_text(json.dumps(config, indent=2) + "\n")
    return fast


def make_spm_tokenizer(spec, texts, out):
    """A SentencePiece BPE model trained here, and transformers' tokenizer converted from it."""
    import io

    import sentencepiece as spm
    import transformers

    sentences = [p for t in texts for p in t.split("\n\n") if p.strip()]  # paragraphs: newlines get pieces too
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, model_type="bpe", vocab_size=SPM_VOCAB,
        character_coverage=0.99, byte_fallback=True, split_digits=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, max_sentence_length=16384,
        num_threads=1, minloglevel=2, **spec["spm"])
    (out / "tokenizer.model").write_bytes(model.getvalue())
    cls = getattr(transformers, spec["tokenizer_class"])
    tok = cls.from_pretrained(out, add_bos_token=spec["add_bos"], add_eos_token=False)
    if spec.get("added_special"):  # after the last piece of tokenizer.model
        from tokenizers import AddedToken
        tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in spec["added_special"]],
                       special_tokens=True)
    for content, special, rstrip in spec.get("added", []):  # (content, special, rstrip), in this order
        from tokenizers import AddedToken
        tok.add_tokens([AddedToken(content, special=special, normalized=False, rstrip=rstrip)],
                       special_tokens=special)
    for content, flags in spec.get("added_flags", {}).items():  # a token already there takes these flags
        from tokenizers import AddedToken
        tok.backend_tokenizer.add_tokens([AddedToken(content, normalized=False, **flags)])
    if spec.get("eos"):
        tok.eos_token = spec["eos"]
    if spec.get("pad"):
        tok.pad_token = spec["pad"]
    tok.chat_template = spec["template"]
    tok.save_pretrained(out)
    # Published checkpoints (saved by transformers 4) mark their chat tokens special and list the added tokens
    # in tokenizer_config.json, which is what llama.cpp's converter reads to type them; the loading
    # arguments transformers 5 leaves there (vocab_file holds this machine's path) stay out.
    tokenizer_json = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    for added in tokenizer_json["added_tokens"]:
        if added["content"] in spec.get("special_added", []):
            added["special"] = True
    (out / "tokenizer.json").write_text(json.dumps(tokenizer_json, indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    for key in ("vocab_file", "is_local", "local_files_only"):
        config.pop(key, None)
    config["add_bos_token"] = spec["add_bos"]
    config["add_eos_token"] = False
    config.update(spec.get("tokenizer_config_extra", {}))
    config["added_tokens_decoder"] = {
        str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
        for a in tokenizer_json["added_tokens"]}
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if spec.get("added_tokens_json"):  # the tokens after tokenizer.model's pieces, as transformers 4 wrote them
        pieces = spm.SentencePieceProcessor(model_file=str(out / "tokenizer.model")).vocab_size()
        added = {a["content"]: a["id"] for a in tokenizer_json["added_tokens"] if a["id"] >= pieces}
        (out / "added_tokens.json").write_text(json.dumps(added, indent=2) + "\n", encoding="utf-8")
    reloaded = transformers.AutoTokenizer.from_pretrained(out)
    assert type(reloaded) is cls, type(reloaded)
    for text in PROBES + spec.get("probes", []) + texts:
        assert reloaded(text)["input_ids"] == tok(text)["input_ids"], text
    # transformers' tokenizer.json against SentencePiece itself, for the record
    sp = spm.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))
    differ = [t for t in texts if sp.encode(t) != reloaded(t, add_special_tokens=False)["input_ids"]]
    print(f"{len(differ)} of {len(texts)} texts tokenized differently by sentencepiece and transformers")
    return reloaded


def make_model(spec, tokenizer, out, seed):
    import torch
    import transformers

    cfg_args = copy.deepcopy(spec["config"])
    model_type = cfg_args.pop("model_type")
    text_args = cfg_args.get("text_config", cfg_args)  # a multimodal config's top-level ids stay as the spec has them
    text_args["bos_token_id"] = tokenizer.bos_token_id
    text_args["eos_token_id"] = tokenizer.eos_token_id
    config = transformers.AutoConfig.for_model(model_type, **cfg_args)
    cls = getattr(transformers, spec.get("model_class", "AutoModelForCausalLM"))
    torch.manual_seed(seed)
    model = (cls.from_config(config, attn_implementation="eager") if cls is transformers.AutoModelForCausalLM
             else cls._from_config(config, attn_implementation="eager"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".sinks"):  # gpt-oss: one logit a head, as large as the scores it competes with
                p.copy_(torch.randn_like(p))
            elif name.endswith("mlp.router.weight"):  # decisive routing: int8 rounding must not flip the experts
                p.copy_(torch.randn_like(p) * 4.0 / p.shape[-1] ** 0.5)
            elif p.dim() == 3 and name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                p.copy_(torch.randn_like(p) / p.shape[-2] ** 0.5)  # gpt-oss's experts are stored in x out
            elif p.dim() == 1:
                if "norm" in name and name.endswith("weight"):  # a vision tower's LayerNorm applies w itself
                    p.copy_((1.0 if "vision_tower" in name else spec.get("norm_center", 1.0))
                            + 0.1 * torch.randn_like(p))
                else:
                    p.copy_(0.1 * torch.randn_like(p))
            elif "embed_tokens" in name:
                p.copy_(torch.randn_like(p))
            elif "lm_head" in name:
                p.copy_(torch.randn_like(p) * 4.0 / p.shape[-1] ** 0.5)
            elif p.dim() == 4:  # a patch convolution: out x channels x patch x patch
                p.copy_(torch.randn_like(p) / p[0].numel() ** 0.5)
            elif "mm_input_projection" in name:  # Gemma 3's projector is stored in x out
                p.copy_(torch.randn_like(p) / p.shape[0] ** 0.5)
            else:  # fan-in is the last dimension (of a stacked experts tensor too)
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
    mxfp4 = set_mxfp4_experts(model, seed) if spec.get("mxfp4") else None
    model.to(getattr(torch, spec["dtype"])).save_pretrained(out, safe_serialization=True)
    if mxfp4 is not None:  # the published layout: the experts' matrices as MXFP4 blocks and scales
        return write_mxfp4_experts(model, mxfp4, out)
    if spec.get("config_json"):  # the published config.json's shape where transformers 5 writes another
        config_path = out / "config.json"
        saved_config = json.loads(config_path.read_text())
        for key in spec["config_json"].get("drop", []):
            saved_config.pop(key, None)
        saved_config.update(spec["config_json"].get("set", {}))
        config_path.write_text(json.dumps(saved_config, indent=2, sort_keys=True) + "\n")
    if spec.get("tensor_renames"):  # the published tensor names where transformers 5 writes others
        from safetensors.torch import load_file, save_file
        tensors = load_file(out / "model.safetensors")
        for old, new in spec["tensor_renames"]:
            tensors = {new + k[len(old):] if k.startswith(old) else k: v for k, v in tensors.items()}
        save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    reloaded, info = cls.from_pretrained(out, dtype=torch.float32, attn_implementation="eager",
                                         output_loading_info=True)
    assert not any(info.values()), info
    state, saved = model.state_dict(), reloaded.state_dict()
    assert state.keys() == saved.keys(), (state.keys() ^ saved.keys())
    for k in state:
        assert torch.equal(state[k].float(), saved[k]), k
    return reloaded


def set_mxfp4_experts(model, seed):
    """Random MXFP4 codes and scales for every gpt-oss expert matrix, the
    model's weights set to what they decode to; {parameter name: (blocks,
    scales)} in Hugging Face's layout (rows output-major)."""
    import torch

    rng = np.random.default_rng(seed + 1)
    lut = np.array(FP4_VALUES, dtype=np.float32)
    packed = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                continue
            experts, columns, rows = p.shape  # stored in x out: the rows are the last dimension
            codes = rng.integers(0, 16, size=(experts, rows, columns // 32, 32))
            # 2^-5..2^-3: values of about 1 / sqrt(fan-in) for these shapes
            scales = rng.integers(122, 125, size=(experts, rows, columns // 32)).astype(np.uint8)
            values = lut[codes] * np.exp2(scales.astype(np.float32) - 127)[..., None]
            p.copy_(torch.from_numpy(values.reshape(experts, rows, columns)).transpose(1, 2))
            blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
            packed[name] = (blocks, scales)
    return packed


def write_mxfp4_experts(model, packed, out):
    """model.safetensors with the experts' matrices replaced by their MXFP4
    blocks and scales, and config.json's quantization_config as published;
    the model itself (its weights are the decoded values) in float32."""
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(out / "model.safetensors")
    for name, (blocks, scales) in packed.items():
        del tensors[name]
        tensors[name + "_blocks"] = torch.from_numpy(blocks)
        tensors[name + "_scales"] = torch.from_numpy(scales)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    config_path = out / "config.json"
    config = json.loads(config_path.read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return model.float().eval()


def llama_cpp_yarn(model):
    """YaRN as llama.cpp (and omnibus) run it: the ramp between whole
    dimensions (ggml_rope_yarn_corr_dims floors and ceils them), which
    transformers does only with truncate true. gpt-oss's config.json says
    false, llama.cpp's converter has no key for it, so the reference logits
    are transformers' with truncate true (the config.json written keeps
    false, as published). Returns a note for golden.json, or None."""
    import torch

    config = model.config
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type") != "yarn" or rope.get("truncate", True):
        return None
    rope = dict(rope, truncate=True)
    config.rope_parameters = rope
    with torch.no_grad():
        model.model.rotary_emb = type(model.model.rotary_emb)(config=config)
    return ("logits with YaRN's truncate true, as llama.cpp runs YaRN (config.json's false is transformers' "
            "only; llama.cpp's files have no key for it)")


def int8_activation_error(model, sequences, exact):
    """How far ggml's arithmetic for MXFP4 experts alone moves the logits:
    transformers' model again with each expert's inputs rounded as ggml
    rounds them for an MXFP4 dot product (Q8_0: blocks of 32, scale
    max|x| / 127 stored in f16, round to nearest), against its exact
    logits. The bar for omnibus on an MXFP4 file is a multiple of this."""
    import torch
    import transformers.models.gpt_oss.modeling_gpt_oss as gpt_oss

    def q8_0(x):
        blocks = x.reshape(-1, 32)
        d = blocks.abs().max(1, keepdim=True).values / 127
        inverse = torch.where(d > 0, 1 / d, torch.zeros_like(d))
        return (torch.round(blocks * inverse) * d.half().float()).reshape(x.shape)

    def forward(self, hidden_states, router_indices=None, routing_weights=None):
        out = torch.zeros_like(hidden_states)
        for e in range(self.num_experts):
            token, slot = torch.where(router_indices == e)
            if len(token) == 0:
                continue
            gate_up = q8_0(hidden_states[token]) @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
            down = q8_0(self._apply_gate(gate_up)) @ self.down_proj[e] + self.down_proj_bias[e]
            out.index_add_(0, token, down * routing_weights[token, slot, None])
        return out

    original = gpt_oss.GptOssExperts.forward
    gpt_oss.GptOssExperts.forward = forward
    try:
        with torch.no_grad():
            rounded = np.concatenate([model(torch.tensor([s])).logits[0].float().numpy() for s in sequences])
    finally:
        gpt_oss.GptOssExperts.forward = original
    p = exact - exact.max(1, keepdims=True)
    q = rounded - rounded.max(1, keepdims=True)
    lp = p - np.log(np.exp(p).sum(1, keepdims=True))
    lq = q - np.log(np.exp(q).sum(1, keepdims=True))
    kl = (np.exp(lp) * (lp - lq)).sum(1)
    return {"mean_kl": float(kl.mean()),
            "relative_rms": float(np.sqrt(((rounded - exact) ** 2).sum() / (exact ** 2).sum())),
            "note": "transformers with the experts' inputs rounded to Q8_0 as ggml's MXFP4 dot product takes them, "
                    "against its exact logits"}


def llama_cpp_convert(llama_cpp, folder, pre, work):
    """llama.cpp's converter on the folder; the tensors and metadata it writes."""
    out = work / "llama.gguf"
    runner = work / "run_convert.py"
    runner.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(llama_cpp)!r})\n"
        f"sys.path.insert(1, {str(llama_cpp / 'gguf-py')!r})\n"
        + ("import conversion.base as base\n"
           f"base.TextModel.get_vocab_base_pre = lambda self, tokenizer: {pre!r}\n" if pre else "")
        + "import convert_hf_to_gguf\n"
        f"sys.argv = ['convert_hf_to_gguf.py', {str(folder)!r}, '--outfile', {str(out)!r}, '--outtype', 'f16']\n"
        "convert_hf_to_gguf.main()\n")
    subprocess.run([sys.executable, str(runner)], check=True, capture_output=True)
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    import gguf
    reader = gguf.GGUFReader(str(out))
    tensors = [{"name": t.name, "shape": [int(d) for d in t.shape], "type": int(t.tensor_type),
                "sha256": hashlib.sha256(bytes(t.data)).hexdigest()} for t in reader.tensors]
    rope = [t for t in reader.tensors if t.name == "rope_freqs.weight"]
    metadata = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        value = field.contents()
        if isinstance(value, list) and len(value) > 16:
            joined = "\n".join(str(v) for v in value)
            value = {"sha256": hashlib.sha256(joined.encode("utf-8")).hexdigest(), "count": len(value)}
        metadata[key] = value
    result = {"tensors": tensors, "metadata": metadata}
    if rope:
        result["rope_freqs"] = [float(x) for x in rope[0].data]
    return result


def llama_cpp_token_ids(llama_cpp, gguf_file, text):
    """llama.cpp's own tokenizer (llama-tokenize, built beside llama-bench) on
    `text`, special tokens parsed and BOS added as the file says. The
    reference for a SentencePiece vocabulary: transformers' BPE over the same
    pieces differs from SentencePiece (and llama.cpp) on runs of spaces and
    after special tokens."""
    tool = llama_cpp / "build" / "bin" / "llama-tokenize"
    prompt = gguf_file.with_suffix(".prompt.txt")  # a file: -p refuses the empty text
    prompt.write_text(text, encoding="utf-8")
    out = subprocess.run([str(tool), "-m", str(gguf_file), "-f", str(prompt), "--ids", "--log-disable"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def make(arch, spec, llama_cpp, seed):
    import torch

    folder = OUT_DIR / arch
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    texts = corpus()
    tokenizer = (make_spm_tokenizer if "spm" in spec else make_tokenizer)(spec, texts, folder)
    model = make_model(spec, tokenizer, folder, seed)
    # Folder contents transformers writes besides the checkpoint that the
    # test does not need stay out of the repository.
    for extra in ("generation_config.json", "special_tokens_map.json"):
        (folder / extra).unlink(missing_ok=True)

    reference_note = llama_cpp_yarn(model)
    probes = [{"text": t, "ids": tokenizer(t)["input_ids"]} for t in PROBES + spec.get("probes", [])]
    ids = tokenizer("\n\n".join(texts), add_special_tokens=False)["input_ids"]
    rng = np.random.default_rng(seed)
    sequences, rows = [], []
    for _ in range(SEQUENCES):
        start = int(rng.integers(0, len(ids) - SEQUENCE_TOKENS))
        seq = ids[start:start + SEQUENCE_TOKENS]
        with torch.no_grad():
            logits = model(torch.tensor([seq])).logits[0].float().numpy()
        sequences.append({"tokens": seq})
        rows.append(logits)
    logits = np.concatenate(rows)
    s = np.sort(logits, axis=1)
    gaps = s[:, -1] - s[:, -2]
    logits.astype("<f2").tofile(folder / "logits.f16")
    with tempfile.TemporaryDirectory() as work:
        converted = llama_cpp_convert(llama_cpp, folder, spec["pre"], Path(work))
        if "spm" in spec:  # GGUF's llama tokenizer: what llama.cpp itself gives
            for probe in probes:
                probe["llama_cpp_ids"] = llama_cpp_token_ids(llama_cpp, Path(work) / "llama.gguf", probe["text"])
    if spec.get("drop_tokenizer_model"):  # tokenizer.json alone: llama.cpp's conversion of that
        (folder / "tokenizer.model").unlink()
        with tempfile.TemporaryDirectory() as work:
            converted = llama_cpp_convert(llama_cpp, folder, spec["pre"], Path(work))
            for probe in probes:
                probe["llama_cpp_hf_ids"] = llama_cpp_token_ids(llama_cpp, Path(work) / "llama.gguf", probe["text"])
    vocab = spec["config"].get("text_config", spec["config"])["vocab_size"]
    golden = {"vocab": vocab, "source_dtype": spec["dtype"], "probes": probes, "sequences": sequences,
              "logits_file": "logits.f16", "llama_cpp_convert": converted}
    if reference_note:
        golden["reference_note"] = reference_note
    if spec.get("departures"):
        golden["departures"] = spec["departures"]
    if spec.get("mxfp4"):
        golden["int8_activation_error"] = int8_activation_error(model, [s["tokens"] for s in sequences], logits)
    (folder / "golden.json").write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{arch}: {len(probes)} probes, {logits.shape[0]} positions, top-2 gap >= 0.5 at "
          f"{int((gaps >= 0.5).sum())}; llama.cpp wrote {len(converted['tensors'])} tensors")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", type=Path, required=True, help="llama.cpp's source tree (convert_hf_to_gguf.py)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("archs", nargs="*", default=list(ARCHS))
    args = ap.parse_args()
    for arch in args.archs:
        make(arch, ARCHS[arch], args.llama_cpp.resolve(), args.seed)


if __name__ == "__main__":
    main()

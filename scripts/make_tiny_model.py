"""Builds a tiny random-weight Qwen3 model and a BPE tokenizer locally, without any model hub."""
import pathlib
import sys
import sysconfig


def build(out: pathlib.Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    files = [str(p) for p in sorted(stdlib.glob("*.py"))[:300]]
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train(files, trainers.BpeTrainer(vocab_size=2000, special_tokens=specials,
                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                         show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", model_max_length=4096)
    fast.chat_template = (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
        " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)

    cfg = Qwen3Config(vocab_size=2048, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      max_position_embeddings=4096, tie_word_embeddings=True,
                      eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(eos_token_id=2, pad_token_id=0).save_pretrained(out)
    # Real safetensors, random values: the runner's provenance reads this marker and reports the
    # weights as dummy, so no figure measured on this model reads like a real model's.
    (out / "RECIPE_BOT_RANDOM_WEIGHTS").write_text("random-initialised weights (scripts/make_tiny_model.py)\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_model.py OUT_DIR")
    build(pathlib.Path(sys.argv[1]))
    print(f"tiny model written to {sys.argv[1]}")

"""The S3 tokenizer's long-audio path, added to the reference port (shared/reference/chatterbox/refaudio.py).

The port's S3TokenizerV2.quantize refuses mel inputs over 3000 frames (30 s): prepare_conditionals never
reaches them. ChatterboxVC.generate does (vc.py: s3gen.tokenizer(audio_16) on the whole recording), and the
official S3TokenizerV2.quantize then reads the recording in windows. What follows restates that path of
xingchensong/S3Tokenizer @ 2abe1c5 (pip s3tokenizer 0.2.0; chatterbox 0.1.7 depends on `s3tokenizer`
unpinned):

  s3tokenizer/model_v2.py  quantize, lines 388-417: any mel_len > 3000 -> _quantize_mixed_batch
                           _quantize_mixed_batch, lines 419-591: windows of 3000 frames every 2600 (30 s,
                           4 s overlap) over the mel of the WHOLE recording (its log-mel peak, hence the
                           dynamic-range floor, is the recording's); each window zero-padded to 3000 and
                           run as one batch with its true length; while start < mel_len: the last window
                           may be short
  s3tokenizer/utils.py     merge_tokenized_segments, lines 367-390: overlap // 2 * 25 = 50 tokens dropped
                           at each inner edge (window 0 keeps tokens[:-50], inner ones [50:-50], the last
                           [50:]), so a last window of fewer than 50 tokens adds none

install() replaces the port's quantize by this one; inputs of <= 3000 frames take the port's path unchanged.
"""
import torch

MAX_FRAMES = 3000          # 30 s of 16 kHz audio at hop 160
WINDOW_FRAMES = 3000       # window_size 30 s
STRIDE_FRAMES = 3000 - 400  # overlap 4 s
EDGE_TOKENS = (4 // 2) * 25  # half the overlap at 25 tokens/s


def merge_windows(windows):
    """merge_tokenized_segments(windows, overlap=4, token_rate=25)."""
    merged = []
    for i, tokens in enumerate(windows):
        left = 0 if i == 0 else EDGE_TOKENS
        right = len(tokens) if i == len(windows) - 1 else -EDGE_TOKENS
        merged.extend(tokens[left:right])
    return merged


def window_bounds(mel_len):
    """The [start, end) mel frames of each window of a recording of mel_len frames."""
    bounds, start = [], 0
    while start < mel_len:
        bounds.append((start, min(start + WINDOW_FRAMES, mel_len)))
        start += STRIDE_FRAMES
    return bounds


def quantize_windows(model, mel, mel_len):
    """_quantize_mixed_batch for a batch of one long recording: [1, n_mels, T] -> (codes [1, N], lens [1])."""
    assert mel.shape[0] == 1, "the golden generators tokenize one recording at a time"
    n = int(mel_len[0])
    bounds = window_bounds(n)
    segments = [torch.nn.functional.pad(mel[0, :, s:e], (0, WINDOW_FRAMES - (e - s))) for s, e in bounds]
    lens = torch.tensor([e - s for s, e in bounds], dtype=mel_len.dtype)
    hidden, code_len = model.encoder(torch.stack(segments), lens)
    codes = model.quantizer.encode(hidden)
    merged = merge_windows([codes[i, :int(code_len[i])].tolist() for i in range(len(bounds))])
    return torch.tensor([merged], dtype=torch.long), torch.tensor([len(merged)], dtype=torch.long)


def install(refaudio):
    """Gives refaudio.S3TokenizerV2 (hence S3Tokenizer and S3GenRefHolder.tokenizer) the long-audio path."""
    short_path = refaudio.S3TokenizerV2.quantize

    @torch.inference_mode()
    def quantize(self, mel, mel_len):
        if (mel_len > MAX_FRAMES).any():
            return quantize_windows(self, mel, mel_len)
        return short_path(self, mel, mel_len)

    refaudio.S3TokenizerV2.quantize = quantize

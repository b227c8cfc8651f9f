// A file without step and without a final newline: the error is at the end
// of the last line, after multi-byte and wide characters.
optimizer wide
hyper lr = 0.1 // η, 学习率
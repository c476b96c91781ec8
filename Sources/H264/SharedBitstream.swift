// What H.264 shares with H.265 (the bit reader and writer, RBSP emulation prevention, start-code
// scanning, length-prefixed framing) lives in the NALBitstream module. It is re-exported so that
// every user of H264 keeps seeing `BitWriter`, `RBSP`, `AnnexB`, `AnnexBNALUnit` and
// `AnnexBStreamSplitter` through `import H264` alone, as before the split.
@_exported import NALBitstream

/// The bit reader of the H.264 parsers: the shared reader, reporting `H264Error`s.
public typealias BitReader = NALBitReader<H264Error>

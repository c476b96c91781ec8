// MD5 moved to MediaCore (vtdec's verify-picture-hash uses it); tests keep finding it through
// `import SwiftVTTestSupport`.
@_exported import struct MediaCore.MD5

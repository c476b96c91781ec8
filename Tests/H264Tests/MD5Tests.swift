import SwiftVTTestSupport
import Testing

@Suite("Test support: MD5")
struct MD5Tests {
    @Test(
        "RFC 1321 test suite digests",
        arguments: [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a"
            )
        ])
    func digests(input: String, expected: String) {
        #expect(MD5.hex(of: Array(input.utf8)) == expected)
        // The same, fed in uneven pieces.
        var hash = MD5()
        var bytes = Array(input.utf8)[...]
        var piece = 1
        while !bytes.isEmpty {
            hash.update(Array(bytes.prefix(piece)))
            bytes = bytes.dropFirst(piece)
            piece = piece * 3 % 70 + 1
        }
        #expect(hash.finalize() == expected)
    }
}

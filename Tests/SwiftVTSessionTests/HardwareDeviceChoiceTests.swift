import SwiftVT
import Testing

/// vtdec's hardware-device values (issue 34): what each names, which device APIs it allows, and
/// the names that name nothing.
@Suite("hardware device choice")
struct HardwareDeviceChoiceTests {
    @Test(
        "each accepted value names one choice and prints back as written",
        arguments: [
            ("auto", HardwareDeviceChoice.auto), ("va", .anyVA),
            ("/dev/dri/renderD129", .vaRenderNode("/dev/dri/renderD129")),
            ("cuda", .anyCUDA), ("cuda:0", .cuda(ordinal: 0)), ("cuda:3", .cuda(ordinal: 3))
        ])
    func parses(text: String, choice: HardwareDeviceChoice) {
        #expect(HardwareDeviceChoice(parsing: text) == choice)
        #expect(choice.description == text)
    }

    @Test("aliases: empty is auto, vaapi is va, nvdec is cuda")
    func aliases() {
        #expect(HardwareDeviceChoice(parsing: "") == .auto)
        #expect(HardwareDeviceChoice(parsing: "vaapi") == .anyVA)
        #expect(HardwareDeviceChoice(parsing: "nvdec") == .anyCUDA)
    }

    @Test("names that name nothing", arguments: ["gpu0", "cuda:", "cuda:-1", "cuda:one", "/dev/nvidia0", "CUDA"])
    func refuses(text: String) {
        #expect(HardwareDeviceChoice(parsing: text) == nil)
    }

    @Test("which APIs each choice allows, and the device it narrows them to")
    func allowedAPIs() {
        #expect(HardwareDeviceChoice.auto.allowsVA && HardwareDeviceChoice.auto.allowsCUDA)
        #expect(HardwareDeviceChoice.anyVA.allowsVA && !HardwareDeviceChoice.anyVA.allowsCUDA)
        let node = HardwareDeviceChoice.vaRenderNode("/dev/dri/renderD128")
        #expect(
            node.allowsVA && !node.allowsCUDA && node.renderNode == "/dev/dri/renderD128" && node.cudaOrdinal == nil)
        let second = HardwareDeviceChoice.cuda(ordinal: 1)
        #expect(!second.allowsVA && second.allowsCUDA && second.cudaOrdinal == 1 && second.renderNode == nil)
        #expect(HardwareDeviceChoice.anyCUDA.cudaOrdinal == nil)
    }
}

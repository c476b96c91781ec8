// `swift package install-plugin`: builds libgstswiftvt.so in release (Swift runtime linked in
// statically) and copies it into the user's GStreamer plugin directory, which GStreamer scans by
// default:
//
//   swift package --allow-writing-to-directory ~/.local/share/gstreamer-1.0/plugins install-plugin
//   swift package --allow-writing-to-directory DIR install-plugin --destination DIR
//
// This is a build tool, not part of the plugin, so Foundation is fine here.
import Foundation
import PackagePlugin

@main
struct InstallGStreamerPlugin: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let destination = extractor.extractOption(named: "destination").last
            ?? FileManager.default.homeDirectoryForCurrentUser
                .appendingPathComponent(".local/share/gstreamer-1.0/plugins").path

        print("Building gstswiftvt (release)...")
        let result = try packageManager.build(
            .product("gstswiftvt"), parameters: .init(configuration: .release, logging: .concise))
        guard result.succeeded else {
            print(result.logText)
            throw InstallError("the release build of gstswiftvt failed (log above)")
        }
        guard let library = result.builtArtifacts.first(where: { $0.url.lastPathComponent == "libgstswiftvt.so" }) else {
            throw InstallError("the build produced no libgstswiftvt.so")
        }
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: destination, withIntermediateDirectories: true)
        let target = URL(fileURLWithPath: destination).appendingPathComponent("libgstswiftvt.so")
        // Write next to the target and rename, so a running GStreamer never sees a half-written file.
        let temporary = URL(fileURLWithPath: destination).appendingPathComponent(".libgstswiftvt.so.installing")
        try? fileManager.removeItem(at: temporary)
        try fileManager.copyItem(at: library.url, to: temporary)
        // rename(2) replaces an existing file atomically.
        guard rename(temporary.path, target.path) == 0 else {
            throw InstallError("could not move the plugin into place at \(target.path) (errno \(errno))")
        }
        print("Installed \(target.path)")
        print("Check with: gst-inspect-1.0 swiftvt")
    }
}

struct InstallError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

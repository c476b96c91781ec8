import Glibc
import SwiftVT
import SwiftVTFileSupport

/// The examples' command lines: positional arguments and `--name value` options.
public struct CommandLineOptions {
    public var positional: [String] = []
    private var options: [String: String] = [:]

    public init(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument.hasPrefix("--"), let value = remaining.popFirst() {
                options[String(argument.dropFirst(2))] = value
            } else {
                positional.append(argument)
            }
        }
    }

    public func string(_ name: String) -> String? { options[name] }

    public func integer(_ name: String, default value: Int) -> Int {
        guard let text = options[name] else { return value }
        guard let number = Int(text), number > 0 else { exitWithError("--\(name) \(text) is not a positive whole number") }
        return number
    }

    /// `--hardware auto|require|disable`, VideoToolbox's Enable/RequireHardwareAccelerated keys.
    public var hardwarePolicy: HardwarePolicy {
        guard let text = options["hardware"] else { return .auto }
        guard let policy = HardwarePolicy(rawValue: text) else {
            exitWithError("--hardware \(text): use auto, require or disable")
        }
        return policy
    }
}

/// Prints `message` to standard error and exits with status 1.
public func exitWithError(_ message: String) -> Never {
    FileContents.printError(message)
    exit(1)
}

/// A failure with a message for the user, thrown where cleanup (`defer`) must run before the
/// program exits with it.
public struct ExampleFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

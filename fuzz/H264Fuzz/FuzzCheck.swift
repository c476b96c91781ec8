// How the fuzz target reports a broken invariant: a trap the fuzzer records as a crash, with the
// message printed. `precondition` would trap too, but an optimized build (the fuzz build is
// -c release) drops its message, and the message is the report.

/// Traps with `message` unless `condition` holds.
@inline(__always)
func require(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fail(message(), file: file, line: line) }
}

/// Traps with `message`.
func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}

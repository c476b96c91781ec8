import Glibc

/// Bytes currently allocated from the glibc heap (`mallinfo2().uordblks`), for tests that check
/// memory stays flat over many cycles.
///
/// Glibc's module map does not include `<malloc.h>`, so `mallinfo2` is looked up with `dlsym`.
/// It returns an 80-byte struct of ten `size_t`s, which every supported ABI (x86-64 SysV,
/// AArch64) returns through a caller-provided buffer; declaring the function as returning a
/// larger imported C struct (`rusage`, 144 bytes) makes the compiler reserve and pass such a
/// buffer, and `uordblks` is the eighth field. Returns nil if the symbol is missing (glibc < 2.33).
///
/// Allocations above the mmap threshold (128 KB by default) are not counted in `uordblks`;
/// use ``mappedHeapBytes()`` for those.
public func heapBytesInUse() -> Int? {
    mallinfo2Field(7)
}

/// Bytes glibc's allocator currently holds in mmap'd chunks (`mallinfo2().hblkhd`): the large
/// allocations (pictures, codec tables) that ``heapBytesInUse()`` does not see.
public func mappedHeapBytes() -> Int? {
    mallinfo2Field(4)
}

private func mallinfo2Field(_ index: Int) -> Int? {
    typealias MallInfo2 = @convention(c) () -> rusage
    guard MemoryLayout<rusage>.size >= 10 * MemoryLayout<Int>.size,
        let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallinfo2") // RTLD_DEFAULT
    else { return nil }
    var info = unsafeBitCast(symbol, to: MallInfo2.self)()
    return withUnsafeBytes(of: &info) { $0.load(fromByteOffset: index * MemoryLayout<Int>.size, as: Int.self) }
}

/// Heap growth (in-use plus mapped bytes) over `body`, in up to `attempts` windows, stopping at
/// the first that grows by at most `tolerance`. The heap is process-wide and test suites run in
/// parallel, so one window can catch another test's allocations; a real leak grows in *every*
/// window, so "some window stayed within the tolerance" still fails on a leak as long as the
/// tolerance is below one window's worth of leaked blocks. Returns every window's growth.
public func heapGrowths(attempts: Int = 3, tolerance: Int, _ body: () throws -> Void) rethrows -> [Int] {
    var growths: [Int] = []
    for _ in 0..<attempts {
        let before = (heapBytesInUse() ?? 0) + (mappedHeapBytes() ?? 0)
        try body()
        let growth = (heapBytesInUse() ?? 0) + (mappedHeapBytes() ?? 0) - before
        growths.append(growth)
        if growth <= tolerance { break }
    }
    return growths
}

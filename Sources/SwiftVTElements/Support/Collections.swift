extension Array {
    /// The element at `index`, or nil outside the array.
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

extension Substring {
    /// The text without leading and trailing spaces.
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

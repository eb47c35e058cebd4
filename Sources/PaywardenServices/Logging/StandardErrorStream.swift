import Foundation

/// Standard error as a stream for the log handlers: each line written whole.
public struct StandardErrorStream: TextOutputStream, Sendable {
    public init() {}

    /// One write(2) a line: lines of concurrent requests never interleave.
    public mutating func write(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}

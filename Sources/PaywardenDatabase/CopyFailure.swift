/// Why a copy or comparison cannot go on, and what to do.
public struct CopyFailure: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

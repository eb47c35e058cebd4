/// Why the service could not start: a message that says what to fix.
public struct ServerStartError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

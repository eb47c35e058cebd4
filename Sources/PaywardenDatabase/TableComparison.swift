/// One table on two databases: its rows and the digest of its rows (``DatabaseCopy``) on each.
public struct TableComparison: Sendable, Hashable, Encodable {
    public var table: String
    public var sourceRows: Int
    public var targetRows: Int
    /// SHA-256, hex.
    public var sourceDigest: String
    public var targetDigest: String

    public var matches: Bool { sourceRows == targetRows && sourceDigest == targetDigest }
}

/// Where a merchant key is in its life.
///
/// pending (key and CSR, no certificate) → active (certificate imported; decrypts, may be
/// "current") → retired (still decrypts, excluded from "current") → destroyed (objects removed).
public enum KeyState: String, Sendable, Hashable, Codable, CaseIterable {
    case pending
    case active
    case retired

    /// Whether tokens encrypted to this key are decrypted.
    public var decrypts: Bool { self == .active || self == .retired }
}

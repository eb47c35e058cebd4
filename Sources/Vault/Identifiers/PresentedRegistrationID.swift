/// A registration ID as a client presented it (a redemption, a relayed authorisation): perhaps
/// malformed, perhaps another organisation's or never issued, and a bearer secret either way, so
/// it never prints. The vault answers 877 for one that is not 19 digits MOD 10+1 without a look-up;
/// a ``RegistrationID`` is one the vault issued.
public struct PresentedRegistrationID: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What was presented, as it was.
    public let value: String

    public init(_ value: String) {
        self.value = value
    }

    public init(_ issued: RegistrationID) {
        value = issued.value
    }

    /// Whether it can be an ID this vault issued (and is short enough to be looked at at all).
    public var isWellFormed: Bool {
        value.utf8.count <= RegistrationID.maximumPresentedLength && RegistrationID.isWellFormed(value)
    }

    public var description: String { "<registration id>" }
    public var debugDescription: String { description }
}

/// A secret (an account number, a cryptogram, a PIN block, key bytes) that cannot be printed by
/// accident: `description`, `debugDescription`, string interpolation, `dump` and reflection all
/// show a mask, so a log line, an error message or a metric label built from it carries nothing.
/// Reading the value is explicit: `secret.revealed`.
public struct Sensitive<Value: Sendable>: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private let value: Value
    /// What the mask may show, e.g. a PAN's last four digits; empty by default.
    private let hint: String

    public init(_ value: Value, hint: String = "") {
        self.value = value
        self.hint = hint
    }

    /// The secret itself. Every use is a place where it can leave: name them deliberately.
    public var revealed: Value { value }

    public var description: String { hint.isEmpty ? "<redacted>" : "<redacted \(hint)>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension Sensitive: Equatable where Value: Equatable {}
extension Sensitive: Hashable where Value: Hashable {}

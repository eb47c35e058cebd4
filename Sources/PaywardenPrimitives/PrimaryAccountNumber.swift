/// The one rule for how long an account number may be, shared by the vault (what it tokenizes)
/// and the processor messages (what they forward).
public enum PrimaryAccountNumber {
    /// 13 to 19 digits. ISO/IEC 7812 allows up to 19; Apple's device and merchant account numbers
    /// are 16 to 19; the OmniToken formats the vault issues are defined from 13 (six and four kept,
    /// a check digit, and random digits between, too few below 13). Every number Paywarden forwards
    /// comes from a payload or from the vault, so a shorter one (Maestro's 12) is refused everywhere.
    public static let lengths = 13...19

    /// "13 to 19", for messages.
    public static let lengthsDescription = "\(lengths.lowerBound) to \(lengths.upperBound)"
}

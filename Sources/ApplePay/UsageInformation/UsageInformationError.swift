/// Why a `UsageInformation` document is refused: the member (a JSON path such as
/// `upcomingPayments[2].recurringPaymentDetails.interval.unit`) and what is wrong with it.
public struct UsageInformationError: Error, Sendable, Hashable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public init(_ path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

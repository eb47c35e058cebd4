import ApplePay
import ArgumentParser
import Foundation

/// What `token inspect` and `token decrypt` share.
struct TokenOptions: ParsableArguments {
    @Argument(help: "The token file, or - for standard input.")
    var file: String

    @Option(help: "Evaluate the signature and chain as of this ISO 8601 instant (e.g. 2014-10-27T19:51:43Z) instead of now.")
    var at: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func instant() throws -> Date? {
        guard let at else { return nil }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: at) { return date }
        formatter.formatOptions.insert(.withFractionalSeconds)
        guard let date = formatter.date(from: at) else {
            throw CommandFailure(.refused, "--at \(at) is not an ISO 8601 instant such as 2014-10-27T19:51:43Z")
        }
        return date
    }

    func token() throws -> [UInt8] {
        let bytes = try InputFile.read(file, what: "token")
        guard bytes.count <= PaymentToken.maximumEncodedSize else {
            throw CommandFailure(.refused, "malformed_token: the file is \(bytes.count) bytes; a token is at most \(PaymentToken.maximumEncodedSize)")
        }
        return bytes
    }

    static func verifier() throws -> TokenSignatureVerifier {
        let environment = ProcessInfo.processInfo.environment
        var window: TimeInterval = 300
        if let text = environment["PAYWARDEN_SIGNING_TIME_WINDOW"] {
            let allowed = TokenSignatureVerifier.allowedSigningTimeWindows
            guard let seconds = TimeInterval(text), allowed.contains(seconds) else {
                throw CommandFailure(.misconfiguration, "PAYWARDEN_SIGNING_TIME_WINDOW must be a number of seconds from \(Int(allowed.lowerBound)) to \(Int(allowed.upperBound))")
            }
            window = seconds
        }
        return TokenSignatureVerifier(anchors: try TrustAnchors.fromEnvironment(environment), signingTimeWindow: window)
    }
}

extension CommandFailure {
    init(_ error: PaymentTokenError) {
        let status: Status = switch error.code {
        case .hsmUnavailable, .overloaded: .unavailable
        default: .refused
        }
        self.init(status, error.description)
    }
}

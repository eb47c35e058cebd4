import ApplePay
import ArgumentParser
import Foundation
import PaywardenConfiguration
import PaywardenServices

/// What `token inspect` and `token decrypt` share.
struct TokenOptions: ParsableArguments {
    @Argument(help: "The token file, or - for standard input.")
    var file: String

    @Option(help: "Evaluate the signature and chain as of this ISO 8601 instant (e.g. 2014-10-27T19:51:43Z) instead of now.")
    var at: String?

    @OptionGroup var output: OutputOptions

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
            throw CommandFailure(
                .refused, "malformed_token: the file is \(bytes.count) bytes; a token is at most \(PaymentToken.maximumEncodedSize)")
        }
        return bytes
    }

    static func verifier(_ settings: PaywardenSettings) throws -> TokenSignatureVerifier {
        TokenSignatureVerifier(
            anchors: try TrustAnchors.configured(settings.verification.trustRoots),
            signingTimeWindow: settings.verification.signingTimeWindow
        )
    }
}

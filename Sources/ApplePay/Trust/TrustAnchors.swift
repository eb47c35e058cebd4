import Foundation
import X509

/// The root certificates a token's signing chain must end in: the embedded, pinned Apple Root
/// CA - G3 unless configured files replace it, for sandboxes and tests.
public struct TrustAnchors: Sendable {
    public let certificates: [Certificate]
    /// Where the anchors came from, for start-up logs and `token inspect`.
    public let source: String

    public init(certificates: [Certificate], source: String) {
        self.certificates = certificates
        self.source = source
    }

    /// True when the anchors are Apple Root CA - G3 alone, as in production.
    public var isApple: Bool { certificates == TrustAnchors.apple.certificates }

    /// How refusals name the anchors: never a file path, which a caller has no business knowing
    /// (``source`` has the paths, for the operator).
    public var name: String { isApple ? "Apple Root CA - G3" : "the configured trust roots" }

    /// Apple Root CA - G3 alone.
    public static let apple: TrustAnchors = {
        // The embedded bytes are fixed and fingerprint-checked; failing to parse them is a build defect.
        let root = try! Certificate(derEncoded: AppleRootCA.g3)
        return TrustAnchors(certificates: [root], source: "embedded Apple Root CA - G3 (SHA-256 \(AppleRootCA.fingerprint.prefix(16))…)")
    }()

    /// Reads PEM (one or more CERTIFICATE blocks) or DER files.
    public static func load(paths: [String]) throws(PaymentTokenError) -> TrustAnchors {
        let certificates: [Certificate]
        do throws(CertificateFile.ListFailure) {
            certificates = try CertificateFile.read(paths: paths)
        } catch {
            throw PaymentTokenError(.certificateChainInvalid, error.message(file: "trust root", files: "the trust-root files"))
        }
        return TrustAnchors(certificates: certificates, source: "configured roots (\(paths.joined(separator: ", ")))")
    }
}

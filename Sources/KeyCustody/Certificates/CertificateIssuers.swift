import ApplePay
import Foundation
// Checking a chain as of a chosen moment (inside the certificate's own validity) is what
// swift-certificates offers this SPI for.
@_spi(FixedExpiryValidationTime) import X509

/// The certification authorities a merchant certificate must come from, checked when it is
/// imported: by default Apple's, compiled in and pinned (``AppleCertificateAuthorities``);
/// configuration may replace them for tests and sandboxes that run a CA of their own.
public struct CertificateIssuers: Sendable {
    /// For one purpose: the CAs allowed to sign a merchant certificate, and the roots above them.
    public struct Chain: Sendable {
        /// Certificates whose holder may sign a merchant certificate directly.
        public let issuers: [Certificate]
        /// Where the issuers' own chains end.
        public let roots: [Certificate]
        /// How an operator reads it: "Apple Worldwide Developer Relations CA - G2 under Apple Root CA - G3".
        public let description: String
    }

    public let processing: Chain
    public let identity: Chain
    /// Where the issuers came from, for messages and start-up logs.
    public let source: String
    /// False when configuration replaced Apple's pinned authorities.
    public let arePinned: Bool

    /// Payment Processing certificates from WWDR CA - G2 under Apple Root CA - G3; Merchant Identity
    /// certificates from WWDR CA - G3 under Apple Root CA.
    public static let apple: CertificateIssuers = {
        typealias A = AppleCertificateAuthorities
        return CertificateIssuers(
            processing: Chain(
                issuers: [A.wwdrG2.certificate], roots: [A.rootG3.certificate], description: "\(A.wwdrG2.name) under \(A.rootG3.name)"),
            identity: Chain(
                issuers: [A.wwdrG3.certificate], roots: [A.root.certificate], description: "\(A.wwdrG3.name) under \(A.root.name)"),
            source: "Apple's pinned certification authorities", arePinned: true)
    }()

    private init(processing: Chain, identity: Chain, source: String, arePinned: Bool) {
        self.processing = processing
        self.identity = identity
        self.source = source
        self.arePinned = arePinned
    }

    /// Replaces Apple's authorities for both purposes: each certificate may issue merchant
    /// certificates and is trusted as it is (a sandbox's or a test's own CA).
    public init(replacingWith certificates: [Certificate], source: String) {
        let chain = Chain(issuers: certificates, roots: certificates, description: source)
        self.init(processing: chain, identity: chain, source: source, arePinned: false)
    }

    /// Reads PEM (one or more CERTIFICATE blocks) or DER files.
    public static func load(paths: [String], source: String) throws(CustodyError) -> CertificateIssuers {
        let certificates: [Certificate]
        do throws(CertificateFile.ListFailure) {
            certificates = try CertificateFile.read(paths: paths)
        } catch {
            throw CustodyError(
                .invalidArgument, error.message(file: "the certificate issuers file", files: "the certificate issuers files"))
        }
        return CertificateIssuers(replacingWith: certificates, source: source)
    }

    public func chain(for purpose: KeyPurpose) -> Chain {
        purpose == .processing ? processing : identity
    }

    /// Verifies that one of `purpose`'s issuers signed `certificate` and that the chain to its
    /// root holds as of `time` (RFC 5280: signatures, validity, CA constraints, critical
    /// extensions understood).
    public func verify(_ certificate: Certificate, purpose: KeyPurpose, at time: Date) async throws(CustodyError) {
        let chain = chain(for: purpose)
        var verifier = Verifier(rootCertificates: CertificateStore(chain.roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            MerchantCertificateIssuerPolicy(issuers: chain.issuers)
        }
        let result = await verifier.validate(leaf: certificate, intermediates: CertificateStore(chain.issuers))
        guard case .validCertificate = result else {
            var reason = ""
            if case .couldNotValidate(let failures) = result, let failure = failures.first {
                reason = " (\(failure.policyFailureReason))"
            }
            let kind = purpose == .processing ? "Payment Processing" : "Merchant Identity"
            throw CustodyError(
                .certificateUntrusted,
                "the certificate does not chain to \(chain.description)\(reason): it is not a \(kind) certificate Apple issued; "
                    + "download the certificate Apple issued for this key's CSR from your Apple Developer account and import that"
            )
        }
    }
}

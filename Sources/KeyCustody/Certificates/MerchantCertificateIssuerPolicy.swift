import SwiftASN1
import X509

/// A merchant certificate must be signed by one of its purpose's issuers itself: a chain through
/// another CA under the same root (Apple's roots also sign code-signing and pass intermediates),
/// or straight from the root, is refused.
struct MerchantCertificateIssuerPolicy: VerifierPolicy {
    let issuers: [Certificate]
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count >= 2, issuers.contains(chain[1]) else {
            return .failsToMeetPolicy(reason: "the certificate was not signed by an accepted issuer")
        }
        return .meetsPolicy
    }
}

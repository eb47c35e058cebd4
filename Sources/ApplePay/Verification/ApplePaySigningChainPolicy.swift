import SwiftASN1
import X509

/// Apple's requirements on a payment-token signing chain beyond RFC 5280: exactly leaf →
/// intermediate → root, the leaf marked 1.2.840.113635.100.6.29 and the intermediate
/// 1.2.840.113635.100.6.2.14 (presence required, value irrelevant).
struct ApplePaySigningChainPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "the chain has \(chain.count) certificates; Apple's is leaf, intermediate, root")
        }
        guard chain[0].extensions[oid: ApplePayOID.paymentTokenSigningLeaf] != nil else {
            return .failsToMeetPolicy(
                reason: "the signing certificate lacks extension 1.2.840.113635.100.6.29: it is not an Apple Pay signing certificate")
        }
        guard chain[1].extensions[oid: ApplePayOID.paymentTokenIntermediate] != nil else {
            return .failsToMeetPolicy(
                reason: "the intermediate lacks extension 1.2.840.113635.100.6.2.14: it is not Apple's payment intermediate")
        }
        return .meetsPolicy
    }
}

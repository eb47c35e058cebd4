import ApplePay
import HTTPTypes
import PaywardenPrimitives
import PaywardenServices
import Vault

/// Which cryptogram of a multi-merchant payment (Apple's `multiTokenContexts`, answered in the
/// payload's `authenticationResponses`) an authorisation uses, named by the relay request's
/// `Paywarden-Submerchant` header, the same in every processor's format because none of them has
/// a field for it. A multi-merchant payment is relayed only with the header, a single-merchant one
/// only without it: Paywarden never picks an entry for the caller.
///
/// Entries are matched by `merchantIdentifier` exactly as Apple sent it (ASCII letters compared
/// without case: the one public sample is lowercase hex). Apple does not document how that
/// identifier is derived from the coordinator's `merchantIdentifier` or whether the entries keep
/// the request's order (docs/apple-pay.md, "Multi-merchant payments"), so neither the request's
/// identifier nor the position is ever matched.
public enum SubmerchantChoice: Sendable, Hashable {
    /// The payment's own cryptogram (`paymentData.onlinePaymentCryptogram`): the coordinator's.
    case coordinator
    /// The entry of `authenticationResponses` with this `merchantIdentifier`.
    case merchantIdentifier(String)

    public static let headerName = HTTPField.Name("Paywarden-Submerchant")!
    /// The header value that names ``coordinator``.
    public static let coordinatorValue = "coordinator"

    /// The request's choice: nil without the header; `invalid_request` for a value that could
    /// name no entry (entries are 1 to 128 visible ASCII characters) or a header given twice.
    public init?(_ fields: HTTPFields) throws(VaultFailure) {
        let values = fields[values: Self.headerName]
        guard let value = values.first else { return nil }
        guard values.count == 1 else {
            throw .vault(VaultError(.invalidRequest, "the Paywarden-Submerchant header is given more than once"))
        }
        if value == Self.coordinatorValue {
            self = .coordinator
            return
        }
        guard (1...128).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .vault(
                VaultError(
                    .invalidRequest,
                    "the Paywarden-Submerchant header is neither `coordinator` nor a merchantIdentifier of 1 to 128 visible ASCII "
                        + "characters"))
        }
        self = .merchantIdentifier(value)
    }

    /// A choice where there is nothing to choose from: a single-merchant payment, or a stored
    /// token's card (no cryptogram at all).
    static let notMultiMerchant = VaultFailure.vault(
        VaultError(
            .submerchantNotFound,
            "the payment is not multi-merchant (no authenticationResponses): send no Paywarden-Submerchant header; nothing was sent"))

    /// The cryptogram `payment` gives the authorisation `choice` names, refused when the choice and
    /// the payment disagree: `submerchant_required` for a multi-merchant payment without a choice,
    /// `submerchant_not_found` for an entry the payment lacks or a choice on a single-merchant one.
    static func cryptogram(of payment: DecryptedPayment, _ choice: SubmerchantChoice?) throws(VaultFailure) -> Sensitive<String>? {
        let entries = payment.authenticationResponses
        guard !entries.isEmpty else {
            guard choice == nil else { throw notMultiMerchant }
            return payment.credential.onlinePaymentCryptogram
        }
        switch choice {
        case nil:
            throw .vault(
                VaultError(
                    .submerchantRequired,
                    "the payment is multi-merchant, with \(entries.count) submerchant cryptograms: name the one this authorisation uses "
                        + "in the Paywarden-Submerchant header (its merchantIdentifier as Apple sent it, or `coordinator`); nothing "
                        + "was sent"))
        case .coordinator:
            return payment.credential.onlinePaymentCryptogram
        case .merchantIdentifier(let identifier):
            let wanted = identifier.lowercased()
            guard let entry = entries.first(where: { $0.merchantIdentifier.lowercased() == wanted }) else {
                throw .vault(
                    VaultError(
                        .submerchantNotFound,
                        "no entry of the payment's authenticationResponses has the merchantIdentifier the Paywarden-Submerchant header "
                            + "names; nothing was sent"))
            }
            return entry.authenticationData
        }
    }
}

import Foundation
import HTTPTypes
import Logging
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages
import Vault

/// Radial (docs/processors.md, "Radial"): the decrypt API answered here, and the digital-wallet
/// authorization relayed.
///
/// `DecryptBlobRequest`: the token is verified and decrypted for the API key's organisation, a
/// high-value token issued, and `DecryptBlobReply` answered with the token (`isToken="true"`), the
/// expiry and Apple's other fields in Radial's naming; never the DPAN or the cryptogram.
///
/// `CreditCardAuthRequest` (DW.xml): the wallet token is decrypted, a high-value token issued, and
/// the request goes to the upstream once as the card-not-present authorization of the card's tender
/// type (VC, MC, AM: `…/creditcard/auth/VC.xml`), the DPAN in `PaymentContext`, the cryptogram and
/// ECI in `SecureVerificationData` (``RadialForwarding``); the reply comes back with the token in
/// `PaymentAccountUniqueId isToken="true"`. A payment without a cryptogram (EMV) or on a network
/// Radial has no tender type for is refused before a token is issued and before anything is sent.
///
/// Seed 003's sequence ("iOS application uses the decrypted payment data to create a
/// CreditCardAuthRequest … processes the request as a regular card not present transaction"):
/// `decryptblob` holds the decrypted payload sealed (``CardVault/holdCryptogram(of:for:organization:)``),
/// and the `CreditCardAuthRequest` with that token in `PaymentContext` (`isToken="true"`) takes it
/// (audited; the key needs `detokenize` as on the vault's own route) and goes upstream as the
/// wallet request does, with the held card, cryptogram and ECI on the first use within 24 hours.
/// Without one, ``StoredCredentialRule`` decides as for every relay, on the token's record before it
/// is detokenized: an MPAN goes as a stored credential; a DPAN is refused (`cryptogram_required`),
/// because Radial's request authenticates a DPAN with its cryptogram only.
///
/// Refusals are Radial's `Fault` with Paywarden's stable code at the start of `Description` and
/// the HTTP status of the same refusal on Paywarden's own API; upstream failures are
/// SERVICE_UNAVAILABLE (503, nothing sent), TIMEOUT (504, outcome unknown) or SYSTEM_ERROR (502).
/// Nothing is retried: the wallet token's transaction id is claimed by then, and its cryptogram
/// authorizes once.
public struct RadialRelay: Sendable {
    /// Where the card data comes from: wallet tokens, the decrypt API's, and high-value tokens.
    let intake: CardIntake
    /// The Radial upstream; without one, authorizations are refused (the decrypt API still answers).
    let upstream: (any ProcessorUpstream)?
    /// The stores each organisation may authorize for (`relay_radial_store_ids`).
    let storeIDs: [OrganizationID: Set<String>]
    /// Sent as Radial's `apiKey` header when configured (the header Radial's own SDK sends:
    /// eBayEnterprise/RetailOrderManagement-SDK, Api/HttpApi.php buildHeader).
    let apiKey: Sensitive<String>?
    let logger: Logger

    public init(
        service: VaultService, upstream: (any ProcessorUpstream)?, storeIDs: [OrganizationID: Set<String>], apiKey: Sensitive<String>?,
        logger: Logger
    ) {
        intake = CardIntake(service: service, form: Self.form)
        self.upstream = upstream
        self.storeIDs = storeIDs
        self.apiKey = apiKey
        self.logger = logger
    }

    public struct Reply: Sendable {
        public var document: ProcessorXML.Document
        public var status: HTTPResponse.Status = .ok
        public var headers: HTTPFields = [:]
    }

    /// Radial's card-not-present request authenticates a card with its cryptogram only (in
    /// `SecureVerificationData`), holds `decryptblob`'s cryptogram for the token's first use, and
    /// has a tender type for VC, MC and AM only.
    public static let form = CardIntake.Form(
        name: "Radial's SecureVerificationData", devicePANs: .never("Radial's card-not-present request"), holdsCryptograms: true,
        accepts: { card throws(VaultFailure) in
            guard card.resolvedNetwork?.radialTenderType != nil else {
                throw .vault(VaultError(.invalidRequest, "the card's network has no Radial tender type (VC, MC or AM)"))
            }
        })

    /// A multi-merchant payment's cryptograms are held together, the payload whole: the authorisation
    /// with the token names the one it uses (`Paywarden-Submerchant`), as a wallet's does.
    public func decryptBlob(_ request: RadialDecryptBlobRequest, organization: OrganizationID) async -> Reply {
        do throws(VaultFailure) {
            // The app authorizes with the token next; the cryptogram waits for that one use, sealed.
            let (issued, card, payment) = try await intake.paymentHeldForFirstUse(
                Array(request.blob.paymentDataJSON), organization: organization)
            let fields = CnpApplePayResponse(payment)
            let reply = RadialDecryptBlobReply(
                token: issued.token, expirationYYMMDD: card.expirationYYMMDD, tenderType: card.resolvedNetwork?.radialTenderType,
                currencyCode: fields?.currencyCode, transactionAmount: fields?.transactionAmount, cardholderName: fields?.cardholderName,
                deviceManufacturerIdentifier: fields?.deviceManufacturerIdentifier, paymentDataType: fields?.paymentDataType, eci: card.eci,
                applePayTransactionId: request.blob.transactionId)
            do throws(ProcessorMessageError) {
                return Reply(document: try reply.document())
            } catch {
                logger.error("the decrypted payment does not fit DecryptBlobReply", metadata: ["field": "\(error.field ?? "")"])
                return fault(.systemError, "the decrypted payment could not be answered (\(error.code.rawValue))", .internalServerError)
            }
        } catch {
            return refusal(error)
        }
    }

    /// `submerchant`: the request's `Paywarden-Submerchant` header, for a multi-merchant payment
    /// (a wallet's, or the one whose cryptogram `decryptblob` held for a token).
    public func authorize(
        _ request: RadialCreditCardAuthRequest, storeID: String, key: APIKey, organization: OrganizationID,
        submerchant: SubmerchantChoice? = nil
    ) async -> Reply {
        guard let upstream else {
            return fault(
                .upstreamUnavailable, "no Radial upstream is configured (relay_radial_upstream); nothing was decrypted or sent",
                .serviceUnavailable)
        }
        // The upstream acts on Paywarden's API key for whatever store the path names.
        guard storeIDs[organization]?.contains(storeID) == true else {
            return fault(
                .forbidden, "forbidden: store \(storeID) is not bound to the API key's organisation (relay_radial_store_ids)", .forbidden)
        }
        let card: ForwardedCardData
        let token: String
        do throws(VaultFailure) {
            switch request.source {
            case .wallet(let wallet):
                let issued: IssuedToken
                (issued, card) = try await intake.payment(
                    Array(wallet.paymentDataJSON), organization: organization, submerchant: submerchant)
                token = issued.token
            case .highValueToken(let stored):
                // The first use takes the cryptogram decryptblob held; later uses are stored credentials,
                // a DPAN's refused (cryptogram_required) before it is detokenized.
                card = try await intake.storedToken(
                    stored, key: key, organization: organization, use: .customerInitiated, submerchant: submerchant)
                token = stored
            }
        } catch {
            return refusal(error)
        }
        return await forward(request, card: card, token: token, storeID: storeID, upstream: upstream)
    }

    /// Sends the card-not-present request once, and rewrites the reply for the client (the token in
    /// `PaymentAccountUniqueId`, the card data nowhere).
    private func forward(
        _ request: RadialCreditCardAuthRequest, card: ForwardedCardData, token: String, storeID: String, upstream: any ProcessorUpstream
    ) async -> Reply {
        let forwarded = RadialForwarding.upstreamRequest(request, card: card)
        guard let tenderType = forwarded.tenderType else {
            return fault(.tokenNotAccepted, "invalid_request: the card's network has no Radial tender type; nothing was sent", .badRequest)
        }
        do throws(UpstreamClient.Failure) {
            let document = try await upstream.exchange(
                "/v1.0/stores/\(storeID)/payments/creditcard/auth/\(tenderType).xml", body: ProcessorXML.serialize(forwarded.document),
                contentType: "application/xml; charset=utf-8", headers: apiKey.map { [("apiKey", $0.revealed)] } ?? []
            ) { body throws(ProcessorMessageError) in
                try RadialReplyRewriter.clientReply(body, token: token, forwarded: card)
            }
            return Reply(document: document)
        } catch {
            return upstreamFailure(error)
        }
    }

    /// A token or vault refusal: Paywarden's code and reason, and its HTTP status.
    private func refusal(_ failure: VaultFailure) -> Reply {
        let code = failure.code
        let fault: RadialFault.Code
        switch code.category {
        case .refused where code == .forbidden: fault = .forbidden
        case .refused: fault = .tokenNotAccepted
        case .unavailable: fault = .upstreamUnavailable
        case .failure: fault = .systemError
        }
        let message = failure.publicMessage(logging: logger, "a Radial request was refused")
        return self.fault(fault, "\(code.rawValue): \(message)", code.httpStatus, headers: code.retryHeaders)
    }

    private func upstreamFailure(_ failure: UpstreamClient.Failure) -> Reply {
        let code: RadialFault.Code =
            switch failure.status {
            case .gatewayTimeout: .upstreamTimeout
            case .serviceUnavailable: .upstreamUnavailable
            default: .systemError
            }
        // No Retry-After: the wallet token's transaction id was spent on this attempt.
        return fault(code, "upstream_unavailable: \(failure.explanation)", failure.status)
    }

    public func fault(_ code: RadialFault.Code, _ description: String, _ status: HTTPResponse.Status, headers: HTTPFields = [:]) -> Reply {
        Reply(
            document: RadialFault(code: code, description: description, timestamp: intake.now).document(), status: status,
            headers: headers)
    }
}

import Foundation
import HTTPTypes
import Logging
import PaywardenPrimitives
import ProcessorMessages
import Vault

/// Radial (processor-apis.md §3): the decrypt API answered here, and the digital-wallet
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
/// Refusals are Radial's `Fault` with Paywarden's stable code at the start of `Description` and
/// the HTTP status of the same refusal on Paywarden's own API; upstream failures are
/// SERVICE_UNAVAILABLE (503, nothing sent), TIMEOUT (504, outcome unknown) or SYSTEM_ERROR (502).
/// Nothing is retried: the wallet token's transaction id is claimed by then, and its cryptogram
/// authorizes once.
struct RadialRelay: Sendable {
    let service: VaultService
    /// The Radial upstream; without one, authorizations are refused (the decrypt API still answers).
    let upstream: UpstreamClient?
    /// The stores each organisation may authorize for (`relay_radial_store_ids`).
    let storeIDs: [String: Set<String>]
    /// Sent as Radial's `apiKey` header when configured (the header Radial's own SDK sends:
    /// eBayEnterprise/RetailOrderManagement-SDK, Api/HttpApi.php buildHeader).
    let apiKey: Sensitive<String>?
    let logger: Logger

    struct Reply: Sendable {
        var document: ProcessorXML.Document
        var status: HTTPResponse.Status = .ok
        var headers: HTTPFields = [:]
    }

    /// Where Radial's SecureVerificationData is the only place for the card's authentication.
    static let cryptogramForm = "Radial's SecureVerificationData"

    func decryptBlob(_ request: RadialDecryptBlobRequest, organization: String) async -> Reply {
        do throws(VaultFailure) {
            let policy = try await service.organizationPolicy(organization)
            let decrypted = try await service.decrypt(Array(request.blob.paymentDataJSON), policy: policy)
            let card = try RelayCardData.forwarded(decrypted.paymentData, issued: nil, cryptogramRequiredBy: nil)
            let issued = try await service.issueToken(for: decrypted, policy: policy)
            let fields = CnpController.applePayResponse(decrypted.paymentData)
            let network = ProcessorMessages.CardNetwork(cnpCode: issued.network.rawValue) ?? card.resolvedNetwork
            let reply = RadialDecryptBlobReply(
                token: issued.token, expirationYYMMDD: card.expirationYYMMDD, tenderType: network?.radialTenderType,
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

    func authorize(_ request: RadialCreditCardAuthRequest, storeID: String, organization: String) async -> Reply {
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
        let issued: IssuedToken
        do throws(VaultFailure) {
            let policy = try await service.organizationPolicy(organization)
            let decrypted = try await service.decrypt(Array(request.wallet.paymentDataJSON), policy: policy)
            // What cannot be relayed is refused before a token is issued for it.
            let unissued = try RelayCardData.forwarded(decrypted.paymentData, issued: nil, cryptogramRequiredBy: Self.cryptogramForm)
            guard unissued.resolvedNetwork?.radialTenderType != nil else {
                throw .vault(VaultError(.invalidRequest, "the card's network has no Radial tender type (VC, MC or AM)"))
            }
            issued = try await service.issueToken(for: decrypted, policy: policy)
            card = try RelayCardData.forwarded(decrypted.paymentData, issued: issued, cryptogramRequiredBy: Self.cryptogramForm)
        } catch {
            return refusal(error)
        }
        let forwarded = RadialForwarding.upstreamRequest(request, card: card)
        guard let tenderType = forwarded.tenderType else {
            return fault(.tokenNotAccepted, "invalid_request: the card's network has no Radial tender type; nothing was sent", .badRequest)
        }
        do throws(UpstreamClient.Failure) {
            let document = try await upstream.exchange(
                "/v1.0/stores/\(storeID)/payments/creditcard/auth/\(tenderType).xml", body: ProcessorXML.serialize(forwarded.document),
                contentType: "application/xml; charset=utf-8", headers: apiKey.map { [("apiKey", $0.revealed)] } ?? []
            ) { body throws(ProcessorMessageError) in
                try RadialReplyRewriter.clientReply(body, token: issued.token, forwarded: card)
            }
            return Reply(document: document)
        } catch {
            return upstreamFailure(error)
        }
    }

    /// A token or vault refusal: Paywarden's code and reason, and its HTTP status.
    private func refusal(_ failure: VaultFailure) -> Reply {
        let error = APIError(failure)
        let code: RadialFault.Code =
            switch error.status {
            case .serviceUnavailable: .upstreamUnavailable
            case .internalServerError: .systemError
            default: .tokenNotAccepted
            }
        return fault(code, "\(error.code): \(error.message)", error.status, headers: error.headers)
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

    func fault(_ code: RadialFault.Code, _ description: String, _ status: HTTPResponse.Status, headers: HTTPFields = [:]) -> Reply {
        Reply(
            document: RadialFault(code: code, description: description, timestamp: service.vault.now).document(), status: status,
            headers: headers)
    }
}

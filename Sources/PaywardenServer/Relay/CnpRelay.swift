import Foundation
import HTTPTypes
import Logging
import ProcessorMessages
import Vault

/// The cnpAPI relay (processor-apis.md §1): an `authorization` or `sale` whose payment source is a
/// `paypage` registration ID or an `applepay` token gets the card data in its place (the DPAN,
/// expiry and cryptogram, Worldpay's merchant-decrypted form) and goes to the upstream once; the
/// upstream's reply comes back with the high-value token in `tokenResponse` and account numbers
/// masked. A registration ID that cannot be redeemed is declined here (877, 878) and the upstream
/// sees nothing; one that was relayed is ended first, so its cryptogram is sent once. Other
/// transactions and payment sources (`card`, `token`, a capture, a credit) need no substitution and
/// pass through unchanged but for the credentials, their replies masked the same way.
///
/// Merchants: the upstream acts on Paywarden's credentials for whichever `merchantId` a request
/// names, so each organisation may name only the merchantIds bound to it (``merchantIDs``,
/// `relay_cnp_merchant_ids`); any other is refused before anything is redeemed or sent.
///
/// Credentials: the client's `<authentication>` holds its Paywarden API key, which never leaves.
/// The upstream gets the configured user and password, or, without them, the client's user and an
/// empty password.
///
/// Upstream failures answer the envelope cnpAPI uses for a system error, `response="2"` (Worldpay's
/// "System Error"), whose message says what happened and whether the request may have arrived,
/// with the gateway status of HTTP: 503 when the upstream could not be reached (nothing was sent),
/// 504 when it did not answer in time (the outcome is unknown: the client must not resend the
/// same cryptogram blindly), 502 when it answered something other than a cnpAPI reply. Paywarden
/// never retries.
struct CnpRelay: Sendable {
    let service: VaultService
    let upstream: UpstreamClient
    /// The merchantIds each organisation may name.
    let merchantIDs: [String: Set<String>]
    let logger: Logger

    /// The path under the upstream's base URL.
    static let path = "/vap/communicator/online"
    /// Only a 3-D Secure payment (a cryptogram) has a place in cnpAPI's merchant-decrypted form.
    static let format = "cnpAPI's merchant-decrypted form"

    struct Reply: Sendable {
        var document: ProcessorXML.Document
        var status: HTTPResponse.Status = .ok
    }

    func relay(_ request: CnpOnlineRequest, key: APIKey, organization: String) async -> Reply {
        guard merchantIDs[organization]?.contains(request.merchantId) == true else {
            return Self.refused(
                request,
                "merchantId \(request.merchantId) is not bound to the API key's organisation (relay_cnp_merchant_ids); nothing was sent")
        }
        let transaction: CnpPaymentTransaction
        switch request.transaction {
        case .authorization(let value), .sale(let value): transaction = value
        case .registerToken: return Self.refused(request, "registerTokenRequest is answered by Paywarden, not relayed")
        case .other: return await passthrough(request)
        }
        let card: ForwardedCardData
        let issued: IssuedToken
        switch transaction.paymentSource {
        case .paypage(let paypage):
            do throws(VaultFailure) {
                let redemption = try await service.redeem(paypage.paypageRegistrationId, key: key, organization: organization)
                issued = redemption.highValueToken
                card = try RelayCardData.forwarded(redemption.paymentData, issued: issued, cryptogramRequiredBy: Self.format)
                // One cryptogram, one authorization: the registration ends before anything is sent,
                // so a resend of the same ID is 878, never a second authorization.
                try await service.endRegistration(paypage.paypageRegistrationId, key: key, organization: organization)
            } catch {
                return refusal(request, transaction: transaction, failure: error)
            }
        case .applePay(let token):
            do throws(VaultFailure) {
                let policy = try await service.organizationPolicy(organization)
                let decrypted = try await service.decrypt(Array(token.paymentDataJSON), policy: policy)
                // What cannot be relayed (an EMV payload) is refused before a token is issued for it.
                _ = try RelayCardData.forwarded(decrypted.paymentData, issued: nil, cryptogramRequiredBy: Self.format)
                issued = try await service.issueToken(for: decrypted, policy: policy)
                card = try RelayCardData.forwarded(decrypted.paymentData, issued: issued, cryptogramRequiredBy: Self.format)
            } catch {
                return refusal(request, transaction: transaction, failure: error)
            }
        case .other, .none:
            return await passthrough(request)
        }
        let document: ProcessorXML.Document
        do throws(ProcessorMessageError) {
            document = try CnpUpstreamRewriter.upstreamRequest(request, card: card, account: upstreamAccount(request))
        } catch {
            return Reply(document: CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, refusing: error))
        }
        let token = CnpResponseRewriter.TokenResult(
            token: issued.token, code: issued.isNew ? .registered : .previouslyRegistered,
            type: issued.network.rawValue.isEmpty ? card.resolvedNetwork?.cnpCode : issued.network.rawValue, bin: issued.firstSix)
        return await exchange(request, document, token: token, card: card)
    }

    /// A transaction with nothing to substitute, sent as the client wrote it but for the credentials.
    private func passthrough(_ request: CnpOnlineRequest) async -> Reply {
        let document: ProcessorXML.Document
        do throws(ProcessorMessageError) {
            document = try CnpUpstreamRewriter.passthroughRequest(request, account: upstreamAccount(request))
        } catch {
            return Reply(document: CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, refusing: error))
        }
        return await exchange(request, document, token: nil, card: nil)
    }

    /// Sends `document` once and rewrites the reply: `token` added, account numbers masked.
    private func exchange(
        _ request: CnpOnlineRequest, _ document: ProcessorXML.Document, token: CnpResponseRewriter.TokenResult?, card: ForwardedCardData?
    ) async -> Reply {
        do throws(UpstreamClient.Failure) {
            let document = try await upstream.exchange(
                Self.path, body: ProcessorXML.serialize(document), contentType: "text/xml; charset=utf-8"
            ) { body throws(ProcessorMessageError) in
                try CnpResponseRewriter.clientResponse(body, token: token, forwarded: card)
            }
            return Reply(document: document)
        } catch {
            return systemError(request, error)
        }
    }

    private func upstreamAccount(_ request: CnpOnlineRequest) -> CnpUpstreamRewriter.UpstreamAccount {
        if let credentials = upstream.configuration.credentials {
            return .init(user: credentials.user, password: credentials.password.revealed)
        }
        return .init(user: request.user, password: "")
    }

    /// A registration ID that cannot be redeemed: 877 or 878, answered here. A token or vault
    /// that is unavailable is a system error; any other refusal says why in a validation error.
    private func refusal(_ request: CnpOnlineRequest, transaction: CnpPaymentTransaction, failure: VaultFailure) -> Reply {
        let decline: CnpLocalDecline?
        switch (transaction.paymentSource, failure.code) {
        case (.paypage, "registration_expired"): decline = .expiredRegistrationId
        case (.paypage, "registration_not_found"), (.paypage, "invalid_request"): decline = .invalidRegistrationId
        default: decline = nil
        }
        if let decline,
            let document = try? decline.response(to: request, transactionId: Self.transactionID(), responseTime: service.vault.now)
        {
            return Reply(document: document)
        }
        if failure.code.hasSuffix("_unavailable") || failure.code == "overloaded" {
            var document = CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: .notXML)
            document.root.setAttribute(
                "message", value: "System Error: Paywarden cannot reach its vault or HSM (\(failure.code)); nothing was sent")
            return Reply(document: document, status: .serviceUnavailable)
        }
        let source = transaction.paymentSource.isApplePay ? "applepay" : "paypage"
        let status = CnpEnvelopeStatus.schemaValidationFailed("\(source) was refused (\(failure.code)): \(failure.message)")
        return Reply(document: CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: status))
    }

    private func systemError(_ request: CnpOnlineRequest, _ failure: UpstreamClient.Failure) -> Reply {
        var document = CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: .notXML)
        document.root.setAttribute("message", value: "System Error: \(failure.explanation)")
        return Reply(document: document, status: failure.status)
    }

    /// A request Paywarden does not relay: a validation error saying why; nothing was sent.
    static func refused(_ request: CnpOnlineRequest, _ why: String) -> Reply {
        Reply(
            document: CnpOnlineResponse.errorEnvelope(
                dialect: request.dialect, version: request.version, status: .schemaValidationFailed(why)))
    }

    static func transactionID() -> UInt64 { UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999) }
}

extension CnpPaymentTransaction.PaymentSource {
    fileprivate var isApplePay: Bool {
        if case .applePay = self { return true }
        return false
    }
}

import Foundation
import HTTPTypes
import Logging
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages
import Vault

/// The cnpAPI relay (docs/processors.md, "cnpAPI"): an `authorization` or `sale` whose payment source is a
/// `paypage` registration ID or an `applepay` token gets the card data in its place (the DPAN,
/// expiry and cryptogram, Worldpay's merchant-decrypted form) and goes to the upstream once; the
/// upstream's reply comes back with the high-value token in `tokenResponse` and account numbers
/// masked. A registration ID that cannot be redeemed is declined here (877, 878) and the upstream
/// sees nothing; one that was relayed is ended first, so its cryptogram is sent once. A `token`
/// whose `cnpToken` (`litleToken`) the vault knows as one of the key's organisation's high-value
/// tokens is swapped for its card (``StoredCredentialRule`` first: a DPAN's token is declined, 899,
/// for a recurring or merchant-initiated use, before it is detokenized; the key needs `detokenize`);
/// any other token is the upstream's own. Other transactions and payment sources (`card`, the
/// upstream's `token`, a capture, a credit) need no substitution and pass through unchanged but
/// for the credentials, their replies masked the same way.
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
public struct CnpRelay: Sendable {
    /// Where the card data comes from: Apple Pay tokens, registration IDs, stored tokens.
    let intake: CardIntake
    let upstream: any ProcessorUpstream
    /// The merchantIds each organisation may name.
    let merchantIDs: [OrganizationID: Set<String>]
    let logger: Logger

    public init(service: VaultService, upstream: any ProcessorUpstream, merchantIDs: [OrganizationID: Set<String>], logger: Logger) {
        intake = CardIntake(service: service, form: Self.form)
        self.upstream = upstream
        self.merchantIDs = merchantIDs
        self.logger = logger
    }

    /// The path under the upstream's base URL.
    public static let path = "/vap/communicator/online"
    /// Only a 3-D Secure payment (a cryptogram) has a place in cnpAPI's merchant-decrypted form.
    public static let form = CardIntake.Form(name: "cnpAPI's merchant-decrypted form")

    public struct Reply: Sendable {
        public var document: ProcessorXML.Document
        public var status: HTTPResponse.Status = .ok
    }

    /// `submerchant`: the request's `Paywarden-Submerchant` header, for a multi-merchant payment.
    public func relay(_ request: CnpOnlineRequest, key: APIKey, organization: OrganizationID, submerchant: SubmerchantChoice? = nil) async
        -> Reply
    {
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
                // One cryptogram, one authorization: the registration ends before anything is sent.
                (issued, card) = try await intake.registration(
                    PresentedRegistrationID(paypage.paypageRegistrationId), key: key, organization: organization, submerchant: submerchant)
            } catch {
                return refusal(request, transaction: transaction, failure: error)
            }
        case .applePay(let token):
            do throws(VaultFailure) {
                (issued, card) = try await intake.payment(
                    Array(token.paymentDataJSON), organization: organization, submerchant: submerchant)
            } catch {
                return refusal(request, transaction: transaction, failure: error)
            }
        case .other("token"):
            return await relayStoredToken(request, transaction: transaction, key: key, organization: organization, submerchant: submerchant)
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

    /// A `token` payment. Whether the token is Paywarden's is the vault's answer for the key's
    /// organisation, never a guess from its digits: one it does not know (the upstream's own, or
    /// another organisation's Paywarden token, which is never detokenized for this key) passes
    /// through unchanged. The organisation's own is swapped for its card, without a cryptogram
    /// (``CardIntake/storedTokenIfPaywardens(_:key:organization:use:submerchant:)``). A vault that cannot answer
    /// refuses the request (503) rather than guess.
    private func relayStoredToken(
        _ request: CnpOnlineRequest, transaction: CnpPaymentTransaction, key: APIKey, organization: OrganizationID,
        submerchant: SubmerchantChoice?
    ) async -> Reply {
        let namespace = request.dialect.namespaceURI
        guard
            let value = transaction.element.firstChild(named: "token", namespaceURI: namespace)?
                .firstChild(named: request.dialect.tokenName, namespaceURI: namespace)?.text
        else { return await passthrough(request) }
        let card: ForwardedCardData
        do throws(VaultFailure) {
            let use = Self.storedCredentialUse(transaction, dialect: request.dialect)
            guard
                let stored = try await intake.storedTokenIfPaywardens(
                    value, key: key, organization: organization, use: use, submerchant: submerchant)
            else { return await passthrough(request) }
            card = stored
        } catch {
            return refusal(request, transaction: transaction, failure: error)
        }
        let document: ProcessorXML.Document
        do throws(ProcessorMessageError) {
            document = try CnpUpstreamRewriter.storedCardRequest(request, card: card, account: upstreamAccount(request))
        } catch {
            return Reply(document: CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, refusing: error))
        }
        // The client named the token; the reply carries no tokenResponse for it.
        return await exchange(request, document, token: nil, card: card)
    }

    /// What counts as recurring or merchant-initiated in cnpAPI (cnpTransaction v12 `orderSourceType`
    /// and `processingTypeEnum`): `orderSource` recurring, installment or recurringtel; a
    /// `processingType` that is merchant-initiated (merchantInitiatedCOF) or sets up a stored
    /// credential for later merchant-initiated use (initialRecurring, initialInstallment, initialCOF);
    /// a `recurringRequest` (a subscription created with the sale). Everything else, with
    /// cardholderInitiatedCOF, is a payment the cardholder starts.
    public static func storedCredentialUse(_ transaction: CnpPaymentTransaction, dialect: CnpDialect) -> StoredCredentialUse {
        let namespace = dialect.namespaceURI
        func value(_ name: String) -> String? {
            transaction.element.firstChild(named: name, namespaceURI: namespace)?.text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let source = value("orderSource"), ["recurring", "installment", "recurringtel"].contains(source) {
            return .merchantInitiated(indicator: "orderSource \(source)")
        }
        if let type = value("processingType"),
            ["merchantInitiatedCOF", "initialRecurring", "initialInstallment", "initialCOF"].contains(type)
        {
            return .merchantInitiated(indicator: "processingType \(type)")
        }
        if transaction.element.firstChild(named: "recurringRequest", namespaceURI: namespace) != nil {
            return .merchantInitiated(indicator: "recurringRequest")
        }
        return .customerInitiated
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
                Self.path, body: ProcessorXML.serialize(document), contentType: "text/xml; charset=utf-8", headers: []
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

    /// A registration ID that cannot be redeemed: 877 or 878, answered here; the organisation's
    /// token unlinked (823) or not for this use (899), the stable code in the message. A token or
    /// vault that is unavailable is a system error; any other refusal says why in a validation error.
    private func refusal(_ request: CnpOnlineRequest, transaction: CnpPaymentTransaction, failure: VaultFailure) -> Reply {
        let decline: CnpLocalDecline?
        switch (transaction.paymentSource, failure.code) {
        case (.paypage, .registrationExpired): decline = .expiredRegistrationId
        case (.paypage, .registrationNotFound), (.paypage, .invalidRequest): decline = .invalidRegistrationId
        case (.other("token"), .tokenUnlinked): decline = .tokenInvalid
        case (.other("token"), .tokenNotRecurringEligible): decline = .tokenUseError
        // Everything else is answered by its category below.
        default: decline = nil
        }
        let detail: String? = if case .other("token") = transaction.paymentSource { failure.code.rawValue } else { nil }
        if let decline,
            let document = try? decline.response(
                to: request, transactionId: Self.transactionID(), responseTime: intake.now, detail: detail)
        {
            return Reply(document: document)
        }
        switch failure.code.category {
        case .unavailable:
            logger.warning("a relayed request was refused", metadata: ["code": "\(failure.code.rawValue)", "detail": "\(failure.message)"])
            var document = CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: .notXML)
            document.root.setAttribute(
                "message", value: "System Error: Paywarden cannot reach its vault or HSM (\(failure.code.rawValue)); nothing was sent")
            return Reply(document: document, status: .serviceUnavailable)
        case .failure:
            logger.error("a relayed request failed", metadata: ["code": "\(failure.code.rawValue)", "detail": "\(failure.message)"])
        case .refused:
            break
        }
        let source = transaction.paymentSource.name
        let status = CnpEnvelopeStatus.schemaValidationFailed(
            "\(source) was refused (\(failure.code.rawValue)): \(failure.code.publicMessage(failure.message))")
        return Reply(document: CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: status))
    }

    private func systemError(_ request: CnpOnlineRequest, _ failure: UpstreamClient.Failure) -> Reply {
        var document = CnpOnlineResponse.errorEnvelope(dialect: request.dialect, version: request.version, status: .notXML)
        document.root.setAttribute("message", value: "System Error: \(failure.explanation)")
        return Reply(document: document, status: failure.status)
    }

    /// A request Paywarden does not relay: a validation error saying why; nothing was sent.
    public static func refused(_ request: CnpOnlineRequest, _ why: String) -> Reply {
        Reply(
            document: CnpOnlineResponse.errorEnvelope(
                dialect: request.dialect, version: request.version, status: .schemaValidationFailed(why)))
    }

    public static func transactionID() -> UInt64 { UInt64.random(in: 100_000_000_000_000_000...999_999_999_999_999_999) }
}

extension CnpPaymentTransaction.PaymentSource {
    /// The payment source's element name, for messages.
    fileprivate var name: String {
        switch self {
        case .paypage: "paypage"
        case .applePay: "applepay"
        case .other(let name): name
        case .none: "no payment source"
        }
    }
}

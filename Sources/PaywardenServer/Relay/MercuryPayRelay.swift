import Foundation
import HTTPTypes
import Logging
import ProcessorMessages
import Vault

/// The MercuryPay relay (processor-apis.md §2): a `SaleByRecordNo` or `AuthorizeByRecordNo` whose
/// `RecordNo` is a registration ID (`TokenType` RegistrationID or RegistrationId) or a high-value
/// token (`OmniToken`) goes to the upstream once as MercuryPay's keyed sale or pre-authorization,
/// `AcctNo` and `ExpDate` in place of `RecordNo` and `TokenType`; an approval comes back with the
/// high-value token in `RecordNo` and `AcctNo` masked, a decline or error with no `RecordNo`.
///
/// A registration ID is ended before the request leaves, as in the cnpAPI relay: one cryptogram,
/// one authorization, and a resend is refused here. An OmniToken is detokenized (audited as a
/// detokenization) and carries no cryptogram; the cryptogram and ECI of a registration go only
/// to the fields the operator names (`relay_mercurypay_cryptogram_field`, `…_eci_field`), because
/// MercuryPay's public material documents none.
///
/// Credentials: the client's Basic or Bearer credentials are its Paywarden API key and never
/// leave; the upstream gets the configured merchant ID and password as HTTP Basic, or no
/// Authorization header.
///
/// Refusals use MercuryPay's error shape (`CmdStatus` Error) with the documented `DSIXReturnCode`
/// where one fits (004117 merchant not set up for tokens, 004118 decryption service unavailable,
/// 004119 token service unavailable), Paywarden's stable code in `PaywardenErrorCode`, and the
/// HTTP status of the same refusal on Paywarden's own API. Upstream failures are 503 (nothing
/// sent), 504 (no answer in time: outcome unknown) or 502; nothing is retried.
struct MercuryPayRelay: Sendable {
    let service: VaultService
    let upstream: UpstreamClient
    let fields: MercuryPayForwarding.Options
    let logger: Logger

    struct Reply: Sendable {
        var body: ProcessorJSON
        var status: HTTPResponse.Status = .ok
        var headers: HTTPFields = [:]
    }

    func relay(_ request: MercuryPayRequest, key: APIKey, organization: String) async -> Reply {
        let card: ForwardedCardData
        let token: String
        do throws(VaultFailure) {
            switch request.tokenType {
            case .registrationID:
                let redemption = try await service.redeem(request.recordNo, key: key, organization: organization)
                // An upstream that takes the cryptogram gets a 3-D Secure payment or nothing.
                card = try RelayCardData.forwarded(
                    redemption.paymentData, issued: redemption.highValueToken,
                    cryptogramRequiredBy: fields.cryptogramField == nil ? nil : "the configured MercuryPay upstream")
                token = redemption.highValueToken.token
                try await service.endRegistration(request.recordNo, key: key, organization: organization)
            case .omniToken:
                card = try RelayCardData.forwarded(try await service.detokenize(request.recordNo, key: key, organization: organization))
                token = request.recordNo
            }
        } catch {
            return Self.refusal(error, invoiceNo: request.invoiceNo)
        }
        return await forward(request, card: card, token: token)
    }

    private func forward(_ request: MercuryPayRequest, card: ForwardedCardData, token: String) async -> Reply {
        let forwarded = MercuryPayForwarding.upstreamRequest(request, card: card, options: fields)
        var headers: [(String, String)] = [("Accept", "application/json")]
        if let credentials = upstream.configuration.credentials {
            let basic = Data("\(credentials.user):\(credentials.password.revealed)".utf8).base64EncodedString()
            headers.append(("Authorization", "Basic \(basic)"))
        }
        do throws(UpstreamClient.Failure) {
            let body = try await upstream.exchange(
                forwarded.path, body: forwarded.body.serialized(), contentType: "application/json", headers: headers
            ) { body throws(ProcessorMessageError) in
                try MercuryPayResponseRewriter.clientResponse(body, token: token, forwarded: card)
            }
            return Reply(body: body)
        } catch {
            return Self.upstreamFailure(error, invoiceNo: request.invoiceNo)
        }
    }

    /// A registration ID or token that cannot be used, or a vault that cannot answer.
    static func refusal(_ failure: VaultFailure, invoiceNo: String?) -> Reply {
        let error = APIError(failure)
        let documented: MercuryPayErrorResponse.TokenError? =
            switch failure.code {
            case "merchant_not_authorized": .merchantNotSetUpForTokens
            case "hsm_unavailable": .decryptionServiceUnavailable
            case "database_unavailable", "overloaded": .tokenServiceUnavailable
            default: nil
            }
        let body = MercuryPayErrorResponse.body(
            returnCode: documented?.rawValue, textResponse: documented.map { "\($0.textResponse): \(error.message)" } ?? error.message,
            invoiceNo: invoiceNo, paywardenCode: error.code)
        return Reply(body: body, status: error.status, headers: error.headers)
    }

    static func upstreamFailure(_ failure: UpstreamClient.Failure, invoiceNo: String?) -> Reply {
        let body = MercuryPayErrorResponse.body(
            returnCode: nil, textResponse: failure.explanation, invoiceNo: invoiceNo, paywardenCode: "upstream_unavailable")
        return Reply(body: body, status: failure.status, headers: failure.status == .serviceUnavailable ? [.retryAfter: "1"] : [:])
    }
}

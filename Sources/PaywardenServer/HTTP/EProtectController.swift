import Foundation
import Hummingbird
import NIOCore
import Vault

/// `POST /eProtect/paypage`: a mobile app's Apple Pay token in eProtect's form fields, a
/// registration ID out. No API key: the app names its merchant by `paypageId`, and each paypage
/// and each client address is rate-limited. eProtect outcomes are HTTP 200 with the code in
/// `response`, as the real service answers.
struct EProtectController {
    let service: VaultService
    let perPaypage: RateLimiter
    let perAddress: RateLimiter
    let maxBodyBytes: Int

    func register(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        if let wait = perAddress.acquire(address) { throw Self.rateLimited(wait, "this client address") }
        let body = try await RequestBody.collect(request, limit: maxBodyBytes)
        let now = service.vault.now
        let form: EProtectForm
        do throws(EProtectForm.Refusal) {
            form = try EProtectForm(body: body)
        } catch {
            let code = EProtectResponseCode.failure
            return try reply(
                EProtectReply(
                    echo: error.partial, response: code, message: "\(code.message): \(error.message)", paywardenCode: "malformed_token",
                    now: now))
        }
        if let wait = perPaypage.acquire(form.paypageID) { throw Self.rateLimited(wait, "this paypageId") }
        let echo = EProtectForm.Echo(id: form.id, orderID: form.orderID, reportGroup: form.reportGroup)
        let outcome: EProtectReply
        do throws(VaultFailure) {
            let registration = try await service.register(token: form.tokenJSON, paypageID: form.paypageID, reportGroup: form.reportGroup)
            outcome = EProtectReply(registration: registration, form: form, now: now)
        } catch {
            let code = EProtectResponseCode(paywardenCode: error.code)
            // eProtect's words first, then Paywarden's reason, which never holds a secret.
            outcome = EProtectReply(
                echo: echo, response: code, message: "\(code.message): \(error.message)", paywardenCode: error.code, now: now)
        }
        return try reply(outcome)
    }

    private func reply(_ reply: EProtectReply) throws -> Response {
        let body = try JSONResponses.encoder.encode(reply)
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// 429 with `Retry-After` in whole seconds (at least 1).
    static func rateLimited(_ wait: Duration, _ who: String) -> APIError {
        let seconds = max(1, Int(wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
        return APIError(
            .tooManyRequests, code: "rate_limited", message: "too many registrations from \(who); retry after \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }
}

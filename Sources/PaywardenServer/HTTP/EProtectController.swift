import Foundation
import Hummingbird
import NIOCore
import ProcessorMessages
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
        if let wait = perAddress.acquire(Self.clientKey(context.remoteAddress)) { throw Self.rateLimited(wait, "this client address") }
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
        let echo = EProtectForm.Echo(id: form.id, orderID: form.orderID, reportGroup: form.reportGroup)
        let outcome: EProtectReply
        do throws(VaultFailure) {
            // Counted per paypage only once the paypage is known to exist, so made-up ids cannot fill the limiter.
            let registration = try await service.register(token: form.tokenJSON, paypageID: form.paypageID, reportGroup: form.reportGroup) {
                paypage throws(VaultFailure) in
                if let wait = perPaypage.acquire(paypage.id) { throw .rateLimited(wait, "this paypageId") }
            }
            outcome = EProtectReply(registration: registration, form: form, now: now)
        } catch {
            if case .rateLimited(let wait, let who) = error { throw Self.rateLimited(wait, who) }
            let code = EProtectResponseCode(eProtectFor: error.code)
            // eProtect's words first, then Paywarden's reason, which never holds a secret; what is
            // the service's own trouble is not detailed to an unauthenticated caller (the log has it).
            let reason =
                Self.internalCodes.contains(error.code) ? "Paywarden cannot register tokens right now; retry shortly" : error.message
            outcome = EProtectReply(echo: echo, response: code, message: "\(code.message): \(reason)", paywardenCode: error.code, now: now)
        }
        return try reply(outcome)
    }

    static let internalCodes: Set<String> = ["hsm_unavailable", "database_unavailable", "internal_error", "overloaded"]

    /// What the per-address limit counts by: an IPv4 address, or an IPv6 /64 (a client controls the
    /// rest of its /64, so counting /128s would let it step around the limit).
    static func clientKey(_ address: SocketAddress?) -> String {
        switch address {
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0.prefix(8)) }
            return "v6:" + bytes.map { String($0, radix: 16) }.joined(separator: ":")
        case .some(let other): return other.ipAddress ?? "unknown"
        case nil: return "unknown"
        }
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

import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PaywardenPrimitives
import PaywardenServices
import ProcessorMessages
import ProcessorRelays

/// Radial's routes (docs/processors.md, "Radial"), answered in Radial's XML, refusals as its `Fault`:
/// - `POST /v1.0/stores/{StoreID}/payments/decryptblob`: a `DecryptBlobRequest` decrypted here
///   (scope `decrypt`);
/// - `POST /v1.0/stores/{StoreID}/payments/creditcard/auth/DW.xml`: a digital-wallet
///   `CreditCardAuthRequest` relayed to the configured upstream (scope `redeem`), or one with the
///   high-value token `decryptblob` answered (scopes `redeem` and `detokenize`).
///
/// Both take `Authorization: Bearer KEY`, a key with an organisation (the token issued belongs to
/// it). The store ID goes into the upstream's path, so it must be a plain identifier.
struct RadialController {
    let relay: RadialRelay
    let maxBodyBytes: Int

    func decryptBlob(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await handle(request, context: context, scope: .decrypt) { body throws(ProcessorMessageError) in
            try RadialDecryptBlobRequest.parse(body)
        } relay: { parsed, caller in
            await relay.decryptBlob(parsed, organization: caller.organization)
        }
    }

    func authorize(_ request: Request, context: PaywardenRequestContext) async throws -> Response {
        try await handle(request, context: context, scope: .redeem) { body throws(ProcessorMessageError) in
            try RadialCreditCardAuthRequest.parse(body)
        } relay: { parsed, caller in
            let submerchant: SubmerchantChoice?
            do throws(VaultFailure) {
                submerchant = try SubmerchantChoice(request.headers)
            } catch {
                return relay.fault(.validationFailed, error.message, .badRequest)
            }
            return await relay.authorize(
                parsed, storeID: caller.storeID, key: caller.key, organization: caller.organization, submerchant: submerchant)
        }
    }

    /// Admits the caller, parses the body (a refusal names the rule it broke), then relays.
    private func handle<Message>(
        _ request: Request, context: PaywardenRequestContext, scope: APIScope,
        parse: ([UInt8]) throws(ProcessorMessageError) -> Message, relay answer: (Message, Caller) async -> RadialRelay.Reply
    ) async throws -> Response {
        let caller: Caller
        switch try await admit(request, context: context, scope: scope) {
        case .refused(let reply): return Self.xml(reply)
        case .admitted(let admitted): caller = admitted
        }
        let parsed: Message
        do throws(ProcessorMessageError) {
            parsed = try parse(caller.body)
        } catch {
            return Self.xml(relay.fault(.validationFailed, error.message, .badRequest))
        }
        return Self.xml(await answer(parsed, caller))
    }

    private struct Caller {
        let key: APIKey
        let organization: OrganizationID
        let storeID: String
        let body: [UInt8]
    }

    private enum Admission {
        case admitted(Caller)
        case refused(RadialRelay.Reply)
    }

    /// The key, its scope and organisation, the store ID, then the body.
    private func admit(_ request: Request, context: PaywardenRequestContext, scope: APIScope) async throws -> Admission {
        guard let key = context.identity else {
            var reply = relay.fault(.unauthorized, "unauthorized: send an API key as Authorization: Bearer KEY", .unauthorized)
            reply.headers[.wwwAuthenticate] = "Bearer"
            return .refused(reply)
        }
        guard key.scopes.contains(scope), let organization = key.organization else {
            return .refused(
                relay.fault(.forbidden, "forbidden: API key \(key.name) needs the \(scope.rawValue) scope and an organisation", .forbidden))
        }
        let storeID = context.parameters.get("StoreID") ?? ""
        guard (1...40).contains(storeID.utf8.count),
            storeID.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_".unicodeScalars.contains($0))
            })
        else {
            return .refused(relay.fault(.validationFailed, "the store ID must be 1–40 letters, digits, '-' or '_'", .badRequest))
        }
        return .admitted(
            Caller(
                key: key, organization: organization, storeID: storeID, body: try await RequestBody.collect(request, limit: maxBodyBytes)))
    }

    static func xml(_ reply: RadialRelay.Reply) -> Response {
        var headers = reply.headers
        headers[.contentType] = "application/xml; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(
            status: reply.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: ProcessorXML.serialize(reply.document))))
    }
}

extension RadialController {
    /// Radial's decrypt API and digital-wallet authorization under a store's payments path; the
    /// controller authorises, answering in Radial's `Fault`.
    func routes(keys: APIKeyRegistry) -> RouteCollection<PaywardenRequestContext> {
        let routes = RouteCollection(context: PaywardenRequestContext.self)
        routes.group("/v1.0/stores/{StoreID}/payments").add(middleware: BearerAPIKeyAuthenticator(registry: keys))
            .post("/decryptblob", use: decryptBlob)
            .post("/creditcard/auth/DW.xml", use: authorize)
        return routes
    }
}

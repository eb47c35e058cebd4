import Foundation
import KeyCustody
import OutboundTLS
import PaywardenServer
import PaywardenServices
import PaywardenTestTraits
import PaywardenTesting
import ProcessorRelays
import Testing

/// `PAYWARDEN_TRACING=on` end to end: a real server exporting over OTLP/HTTP to a stand-in
/// collector, a decrypt, an eProtect registration and its redemption, a relayed cnpAPI
/// authorization and Apple's merchant-token notification. A request's steps (decryption, replay
/// claim, HSM operation) are events of its span, a call out a span of its own (request → processor
/// call); the processor and Apple receive the exported trace's `traceparent`, and no exported byte
/// carries card data, a registration ID, a token or a merchant-token id. A stranger's trace context is not believed (its request gets a
/// trace of Paywarden's, its tracestate goes nowhere); a peer of `PAYWARDEN_TRACE_CONTEXT_FROM`'s
/// traceparent is continued.
///
/// InstrumentationSystem is set once per process: this suite's test is the only one that turns
/// tracing on.
@Suite(.serialized, .releasesTestResources)
struct TracingTests {
    @Test func requestsAreTracedWithStepEventsAPropagatedTraceparentAndNoCardData() async throws {
        let collector = try await OTLPCollectorStandIn.start()
        let apple = try await AppleGatewayStandIn.start(clientCA: TestCertificateAuthority.shared.certificate)
        let cnp = CnpRelayTests()
        let merchantTokens = MerchantTokenEndpointTests()
        try await RelayFixture.with { base in
            var relay = base
            relay.credentials = .init(user: "upstream-user", password: "upstream-secret")
            return RelayConfiguration(cnp: relay, cnpMerchantIDs: ["example": ["01234"]])
        } adjust: { configuration in
            configuration.tracing = TracingConfiguration(endpoint: collector.tracesURL, exportDelay: .milliseconds(50))
            // The test's "gateway": the only peer whose traceparent is believed.
            configuration.traceContextSources = ["127.0.0.2/32"].compactMap(IPAddressBlock.init)
            configuration.merchantTokens.gateway = try AppleGatewayConfiguration(
                baseURL: apple.baseURL, hostPolicy: try AppleGatewayHostPolicy(patterns: ["localhost:\(apple.port)"]),
                extraTrustRoots: [apple.serverCA])
            configuration.merchantTokens.allowedSources = [IPAddressBlock("127.0.0.0/8")].compactMap { $0 }
            configuration.merchantTokens.pollInterval = .milliseconds(200)
        } prepare: { store in
            // The merchant's identity key, for the mutual TLS to Apple.
            let merchantID = MerchantTokenEndpointTests.merchantID
            let (_, csr) = try await store.create(merchantID: merchantID, purpose: .identity, algorithm: .rsa)
            let certificate = try TestCertificateAuthority.shared.issue(csrPEM: csr, merchantID: merchantID, purpose: .identity)
            _ = try await store.importCertificate(MerchantCertificate(bytes: certificate))
        } _: { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            var secrets: [String] = [server.decryptKey, server.vaultKey, "upstream-secret"]

            // A decrypt.
            let pan = "4111111111111111"
            let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="
            let decrypted = try await server.send(
                body: try server.ecToken(payload: PaymentPayloads.threeDSecure(pan: pan, cryptogram: cryptogram)))
            #expect(decrypted.status == 200, "\(decrypted.text)")
            secrets += [pan, cryptogram]

            // An eProtect registration and its redemption by the path form (the ID in the path).
            let dpan = "5204245250003005"
            let secondCryptogram = "AgAAAAAAAIR8CQrXcIhbQAAAAAA="
            let registrationID = try await server.registerThroughEProtect(pan: dpan, cryptogram: secondCryptogram)
            let redeemed = try await server.send(.POST, "/v1/registrations/\(registrationID)/redeem", apiKey: .some(server.vaultKey))
            #expect(redeemed.status == 200, "\(redeemed.text)")
            let redeemedBody = try JSONSerialization.jsonObject(with: Data(redeemed.body)) as? [String: Any]
            let token = try #require((redeemedBody?["highValueToken"] as? [String: Any])?["token"] as? String)
            secrets += [dpan, secondCryptogram, registrationID, token]

            // A relayed cnpAPI authorization of another registration.
            let relayedPAN = "4457119922391006"
            let relayedID = try await server.registerThroughEProtect(pan: relayedPAN, cryptogram: CnpRelayTests.cryptogram)
            let relayed = try await cnp.post(
                server, CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: relayedID)))
            #expect(relayed.status == 200 && element("response", in: relayed.text) == "000", "\(relayed.text)")
            let relayedToken = try #require(element("cnpToken", in: relayed.text))
            secrets += [relayedPAN, relayedID, relayedToken]

            // A stranger's trace context (its own trace id, not sampled, a tracestate of its own) on
            // another relayed authorization: not believed. The request gets a trace of Paywarden's,
            // recorded and exported, and neither the caller's trace id nor its tracestate reaches the
            // processor (under Paywarden's mutual-TLS identity) or the log.
            let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
            let strangerPAN = "4457119922392004"
            let strangerID = try await server.registerThroughEProtect(pan: strangerPAN, cryptogram: CnpRelayTests.cryptogram)
            let stranger = try await server.send(
                .POST, "/vap/communicator/online",
                body: CnpTestMessages.envelope(.cnp, password: server.vaultKey, CnpTestMessages.paypage(registrationID: strangerID)),
                apiKey: .some(nil),
                contentType: "text/xml",
                headers: [("traceparent", "00-\(callerTrace)-00f067aa0ba902b7-00"), ("tracestate", "stranger=chosen-state")])
            #expect(stranger.status == 200 && element("response", in: stranger.text) == "000", "\(stranger.text)")
            secrets += [strangerPAN, strangerID]
            #expect(upstream.traceparents.count == 2, "\(upstream.traceparents)")
            #expect(!upstream.traceparents.contains { $0.contains(callerTrace) }, "\(upstream.traceparents)")
            #expect(upstream.traceparents.allSatisfy { $0.hasSuffix("-01") }, "Paywarden's own trace is sampled: \(upstream.traceparents)")
            #expect(upstream.tracestates.isEmpty, "a caller's tracestate went to the processor: \(upstream.tracestates)")
            #expect(!server.logs.text.contains(callerTrace), "a log line carries the caller's trace id")

            // A peer PAYWARDEN_TRACE_CONTEXT_FROM names (127.0.0.2, from which this connection
            // comes): its traceparent is continued, its tracestate still not taken.
            #expect(server.scheme == "http")
            let gatewayTrace = "0af7651916cd43dd8448eb211c80319c"
            let gatewaySpan = "b7ad6b7169203331"
            let gateway = try RawTCPConnection(port: server.port, from: "127.0.0.2")
            try gateway.send(
                "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\ntraceparent: 00-\(gatewayTrace)-\(gatewaySpan)-01\r\n"
                    + "tracestate: gateway=kept-out\r\nConnection: close\r\n\r\n")
            let answered = gateway.read(until: "\r\n\r\n", upTo: .seconds(10))
            #expect(answered.text.hasPrefix("HTTP/1.1 200"), "\(answered.text)")
            gateway.close()

            // A merchant token, and Apple's notification of its unlinking: the event worker fetches
            // the event from Apple (its own trace: it runs in the background).
            let (merchantToken, merchantTokenRegistration) = try await merchantTokens.vaultedMerchantToken(server)
            secrets += [
                MerchantTokenEndpointTests.pan, MerchantTokenEndpointTests.merchantTokenID, merchantToken, merchantTokenRegistration,
            ]
            apple.setEvent(
                "evt-traced-1", merchantID: MerchantTokenEndpointTests.merchantID,
                .event(type: "UNLINK", merchantTokenID: MerchantTokenEndpointTests.merchantTokenID))
            #expect(try await merchantTokens.notify(server, event: "evt-traced-1").status == 200)
            let record = try #require(try await merchantTokens.settled(server, event: "evt-traced-1"))
            #expect(record.state == .applied)

            let spans = try await collector.waitForSpans { spans in
                spans.filter { $0.name.hasPrefix("processor.") }.count >= 2 && spans.filter { $0.kind == 2 }.count >= 7
                    && spans.contains { $0.traceIDHex == gatewayTrace }
                    && spans.contains { $0.event { $0 == "paywarden.decrypt" } != nil } && spans.contains { $0.name.hasPrefix("apple.") }
            }

            // The decrypt request: one server span, its steps as events in the order they began
            // (decryption, replay claim, the HSM's key agreement), each with its duration.
            let decryptRequest = try #require(spans.first { $0.kind == 2 && $0.attributes["http.route"] == "/v1/payment-tokens/decrypt" })
            #expect(decryptRequest.name == "POST /v1/payment-tokens/decrypt")
            #expect(decryptRequest.attributes["http.response.status_code"] == "200")
            #expect(decryptRequest.attributes["paywarden.decrypt.outcome"] == "ok")
            #expect(!spans.contains { $0.traceID == decryptRequest.traceID && $0.spanID != decryptRequest.spanID }, "no child spans")
            let decryption = try #require(decryptRequest.event { $0 == "paywarden.decrypt" })
            #expect(decryption.attributes["paywarden.decrypt.outcome"] == "ok")
            let claim = try #require(decryptRequest.event { $0 == "replay.claim" })
            #expect(claim.attributes["db.operation.name"] == "replay.claim" && claim.attributes["paywarden.replay.claimed"] == "true")
            let keyAgreement = try #require(decryptRequest.event { $0.hasPrefix("hsm.") })
            #expect(keyAgreement.attributes["paywarden.hsm.path"] != nil && keyAgreement.attributes["paywarden.hsm.dispatch"] != nil)
            for step in [decryption, claim, keyAgreement] {
                #expect(Int(step.attributes["paywarden.duration_us"] ?? "") != nil, "\(step.name) has its duration")
            }
            #expect(decryption.timeUnixNanoseconds <= claim.timeUnixNanoseconds)
            #expect(claim.timeUnixNanoseconds <= keyAgreement.timeUnixNanoseconds, "the claim comes before the HSM is asked")

            // The registration and the redemption: named by their route templates.
            let registration = try #require(spans.first { $0.kind == 2 && $0.name == "POST /eProtect/paypage" })
            #expect(registration.event { $0 == "paywarden.decrypt" } != nil)
            let redemption = try #require(spans.first { $0.kind == 2 && $0.name.contains("redeem") })
            #expect(redemption.attributes["http.response.status_code"] == "200")
            #expect(redemption.event { $0.hasPrefix("hsm.") } != nil, "the vault opens the payload in the HSM")

            // The relayed authorization: the processor's client span, whose context the upstream received.
            let traceparent = try #require(upstream.traceparents.first)
            let parts = traceparent.split(separator: "-")
            let processorCall = try #require(
                spans.first { $0.name == "processor.cnpapi" && parts.count == 4 && $0.spanIDHex == String(parts[2]) }, "\(traceparent)")
            #expect(processorCall.kind == 3 && processorCall.attributes["paywarden.processor.outcome"] == "ok")
            let relayRequest = try #require(spans.first { $0.spanID == processorCall.parentSpanID })
            #expect(relayRequest.kind == 2 && relayRequest.traceID == processorCall.traceID)
            #expect(parts.count == 4 && parts[0] == "00", "\(traceparent)")
            #expect(parts.count == 4 && String(parts[1]) == processorCall.traceIDHex, "\(traceparent)")
            #expect(parts.count == 4 && String(parts[2]) == processorCall.spanIDHex, "\(traceparent)")

            // The stranger's request: a trace of Paywarden's own, recorded whatever the caller's flags said.
            let processorCalls = spans.filter { $0.name == "processor.cnpapi" }
            #expect(processorCalls.count == 2 && processorCalls.allSatisfy { $0.traceIDHex != callerTrace })
            #expect(!spans.contains { $0.traceIDHex == callerTrace }, "a span joined the caller's trace")
            let strangerRequest = try #require(spans.first { $0.kind == 2 && $0.linkedTraceIDs.contains(callerTrace) })
            #expect(strangerRequest.name == "POST /vap/communicator/online" && strangerRequest.parentSpanID.isEmpty)
            // The gateway's request: a child of the gateway's span, in its trace, with no tracestate.
            let gatewayRequest = try #require(spans.first { $0.kind == 2 && $0.traceIDHex == gatewayTrace })
            #expect(gatewayRequest.name == "GET /healthz" && gatewayRequest.traceState.isEmpty)
            #expect(gatewayRequest.parentSpanID.map { String(format: "%02x", $0) }.joined() == gatewaySpan)

            // The call to Apple: a client span named by the operation, whose context Apple received.
            let fetch = try #require(merchantTokens.eventFetches(apple, event: "evt-traced-1").first)
            let appleTraceparent = try #require(fetch.header("traceparent"))
            let appleParts = appleTraceparent.split(separator: "-").map(String.init)
            let appleCall = try #require(
                spans.first { $0.name.hasPrefix("apple.") && appleParts.count == 4 && $0.spanIDHex == appleParts[2] })
            #expect(appleCall.kind == 3 && appleCall.traceIDHex == appleParts[1], "\(appleTraceparent)")
            #expect(appleCall.attributes["http.response.status_code"] == "200")

            // No span is named by a path, and no exported byte carries a secret.
            for span in spans {
                #expect(!span.name.contains(registrationID) && !span.name.contains(token), "\(span.name)")
                #expect(span.attributes["url.path"] == nil && span.attributes["url.query"] == nil, "\(span.name)")
            }
            let exported = collector.receivedBodies
            #expect(!exported.isEmpty)
            for secret in secrets {
                let needle = Array(secret.utf8)
                for body in exported {
                    #expect(
                        !body.indices.contains { Array(body[$0...].prefix(needle.count)) == needle }, "an exported span carries \(secret)")
                }
            }
        }
        try await apple.stop()
    }
}

import Foundation
import PaywardenConfiguration
import PaywardenServer
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// Slow or idle clients cannot hold the service: a connection that sends nothing for the idle
/// timeout is closed, an unfinished request included, and connections over the cap wait unserved.
@Suite(.serialized, .releasesTestResources)
struct ConnectionLimitTests {
    static let health = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

    @Test func aConnectionThatStopsMidRequestIsClosedAfterTheIdleTimeout() async throws {
        try await withServer({ $0.idleTimeout = .seconds(1) }) { server in
            let complete = try RawTCPConnection(port: server.port)
            try complete.send(Self.health)
            #expect(complete.read(until: "\r\n\r\n", upTo: .seconds(5)).text.hasPrefix("HTTP/1.1 200"))

            // Headers begun, never finished: the slowloris pattern.
            let slow = try RawTCPConnection(port: server.port)
            try slow.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            let start = ContinuousClock.now
            let event = slow.drain(upTo: .seconds(6))
            let elapsed = ContinuousClock.now - start
            #expect(event == .closed, "the server must close a connection whose request stalls")
            #expect(elapsed >= .milliseconds(800) && elapsed < .seconds(4), "closed after \(elapsed), the timeout is 1 s")

            // The kept-alive connection that went quiet after its reply is closed too.
            #expect(complete.drain(upTo: .seconds(4)) == .closed)
        }
    }

    @Test func connectionsOverTheCapWaitUnservedUntilOneCloses() async throws {
        try await withServer({ $0.maxConnections = 2 }) { server in
            // One at a time, each served before the next connects, so the server counts them in order.
            var held: [RawTCPConnection] = []
            for _ in 0..<2 {
                let connection = try RawTCPConnection(port: server.port)
                try connection.send(Self.health)
                #expect(connection.read(until: "\r\n\r\n", upTo: .seconds(5)).text.hasPrefix("HTTP/1.1 200"))
                held.append(connection)
            }
            let third = try RawTCPConnection(port: server.port)
            try third.send(Self.health)
            #expect(third.wait(upTo: .milliseconds(1500)) == .silent, "a third connection must not be served while two are open")

            held[0].close()
            let reply = third.read(until: "\r\n\r\n", upTo: .seconds(5))
            #expect(reply.text.hasPrefix("HTTP/1.1 200"), "served once a connection closed: \(reply)")
            held[1].close()
            third.close()
        }
    }

    @Test func theSettingsHaveTheirDefaultsAndBounds() async throws {
        let configuration = try ServerConfiguration(settings: await PaywardenSettings.load(environment: [:]))
        #expect(configuration.idleTimeout == .seconds(30))
        #expect(configuration.maxConnections == 512)
        let set = try ServerConfiguration(
            settings: await PaywardenSettings.load(environment: [
                "PAYWARDEN_IDLE_TIMEOUT_SECONDS": "5", "PAYWARDEN_MAX_CONNECTIONS": "64",
            ]))
        #expect(set.idleTimeout == .seconds(5) && set.maxConnections == 64)
        for (variable, value) in [("PAYWARDEN_IDLE_TIMEOUT_SECONDS", "0"), ("PAYWARDEN_MAX_CONNECTIONS", "0")] {
            let error = await #expect(throws: ConfigurationError.self) { try await PaywardenSettings.load(environment: [variable: value]) }
            #expect(error?.message.contains(variable) == true)
        }
    }
}

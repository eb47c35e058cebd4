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

    /// A body trickled a byte at a time restarts the idle timer with every byte; the read
    /// timeout does not restart: the request is cut off with 408 and the connection closed.
    @Test func aRequestMustArriveWholeWithinTheReadTimeout() async throws {
        try await withServer({ $0.requestReadTimeout = .seconds(1) }) { server in
            // cnpAPI reads its body before it authenticates: the route an anonymous client can hold.
            let body = try RawTCPConnection(port: server.port)
            try body.send("POST /cnpAPI HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/xml\r\nContent-Length: 100\r\n\r\n<")
            let (bodyReply, bodyElapsed) = Self.trickle(on: body, for: .seconds(6))
            #expect(bodyReply.hasPrefix("HTTP/1.1 408"), "\(bodyReply)")
            #expect(bodyReply.lowercased().contains("connection: close"), "\(bodyReply)")
            #expect(bodyElapsed < .seconds(3), "cut off after \(bodyElapsed); the read timeout is 1 s")

            // Headers trickled the same way.
            let headers = try RawTCPConnection(port: server.port)
            try headers.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            let (headersReply, headersElapsed) = Self.trickle(on: headers, for: .seconds(6))
            #expect(headersReply.hasPrefix("HTTP/1.1 408"), "\(headersReply)")
            #expect(headersElapsed < .seconds(3), "cut off after \(headersElapsed); the read timeout is 1 s")

            // A request answered before its body was read (401: no API key), its body sent after, then
            // a second request trickled on the same connection: cut off like the first.
            let early = try RawTCPConnection(port: server.port)
            try early.send(
                "POST /v1/payment-tokens/decrypt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n"
            )
            #expect(early.read(until: "}}", upTo: .seconds(5)).text.hasPrefix("HTTP/1.1 401"))
            try early.send("{")
            try early.send("POST /cnpAPI HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/xml\r\nContent-Length: 100\r\n\r\n<")
            let (earlyReply, earlyElapsed) = Self.trickle(on: early, for: .seconds(6))
            #expect(earlyReply.hasPrefix("HTTP/1.1 408"), "\(earlyReply)")
            #expect(earlyElapsed < .seconds(3), "cut off after \(earlyElapsed); the read timeout is 1 s")

            // A request that arrives whole in time is served, and so is the next on the same connection.
            let prompt = try RawTCPConnection(port: server.port)
            for _ in 0..<2 {
                try prompt.send(Self.health)
                #expect(prompt.read(until: "\r\n\r\n", upTo: .seconds(5)).text.hasPrefix("HTTP/1.1 200"))
                try await Task.sleep(for: .milliseconds(1500))
            }
        }
    }

    /// Sends one byte every 200 ms until the server answers or closes; what it sent and when.
    static func trickle(on connection: RawTCPConnection, for limit: Duration) -> (reply: String, elapsed: Duration) {
        let start = ContinuousClock.now
        var received: [UInt8] = []
        while ContinuousClock.now - start < limit {
            switch connection.wait(upTo: .milliseconds(200)) {
            case .bytes(let bytes):
                received += bytes
                if connection.drain(upTo: .seconds(2)) == .closed {
                    return (String(decoding: received, as: UTF8.self), ContinuousClock.now - start)
                }
            case .closed:
                return (String(decoding: received, as: UTF8.self), ContinuousClock.now - start)
            case .silent:
                if (try? connection.send("a")) == nil { return (String(decoding: received, as: UTF8.self), ContinuousClock.now - start) }
            }
        }
        return (String(decoding: received, as: UTF8.self), ContinuousClock.now - start)
    }

    @Test func aConnectionServesABoundedNumberOfRequests() async throws {
        try await withServer({ $0.maxRequestsPerConnection = 3 }) { server in
            let connection = try RawTCPConnection(port: server.port)
            for number in 1...3 {
                try connection.send(Self.health)
                let reply = connection.read(until: "\r\n\r\n", upTo: .seconds(5)).text
                #expect(reply.hasPrefix("HTTP/1.1 200"), "request \(number): \(reply)")
                #expect(reply.lowercased().contains("connection: close") == (number == 3), "request \(number): \(reply)")
            }
            #expect(connection.drain(upTo: .seconds(3)) == .closed, "closed after its third request")
        }
    }

    /// 512 idle connections from one client address (the default connection cap) leave room for
    /// everyone else: past the per-client cap, that client's connections are closed at once.
    @Test func oneClientCannotHoldEveryConnection() async throws {
        try await withServer { server in
            var held: [RawTCPConnection] = []
            for _ in 0..<512 { held.append(try RawTCPConnection(port: server.port, from: "127.0.0.1")) }
            let other = try RawTCPConnection(port: server.port, from: "127.0.0.2")
            try other.send(Self.health)
            let reply = other.read(until: "\r\n\r\n", upTo: .seconds(5))
            #expect(reply.text.hasPrefix("HTTP/1.1 200"), "another client is served: \(reply)")
            // The flooding client keeps the connections the cap allows; the rest were closed.
            var closed = 0
            for connection in held where connection.wait(upTo: .milliseconds(5)) == .closed { closed += 1 }
            #expect(closed == 512 - 128, "\(closed) of 512 closed")
            for connection in held { connection.close() }
        }
    }

    @Test func theSettingsHaveTheirDefaultsAndBounds() async throws {
        let configuration = try ServerConfiguration(settings: await PaywardenSettings.load(environment: [:]))
        #expect(configuration.idleTimeout == .seconds(30))
        #expect(configuration.maxConnections == 512)
        #expect(configuration.requestReadTimeout == .seconds(10))
        #expect(configuration.maxRequestsPerConnection == 1000 && configuration.maxConnectionsPerClient == 128)
        let set = try ServerConfiguration(
            settings: await PaywardenSettings.load(environment: [
                "PAYWARDEN_IDLE_TIMEOUT_SECONDS": "5", "PAYWARDEN_MAX_CONNECTIONS": "64", "PAYWARDEN_REQUEST_READ_TIMEOUT_SECONDS": "3",
                "PAYWARDEN_MAX_REQUESTS_PER_CONNECTION": "10", "PAYWARDEN_MAX_CONNECTIONS_PER_CLIENT": "8",
            ]))
        #expect(set.idleTimeout == .seconds(5) && set.maxConnections == 64 && set.requestReadTimeout == .seconds(3))
        #expect(set.maxRequestsPerConnection == 10 && set.maxConnectionsPerClient == 8)
        for (variable, value) in [
            ("PAYWARDEN_IDLE_TIMEOUT_SECONDS", "0"), ("PAYWARDEN_MAX_CONNECTIONS", "0"), ("PAYWARDEN_REQUEST_READ_TIMEOUT_SECONDS", "0"),
            ("PAYWARDEN_MAX_REQUESTS_PER_CONNECTION", "0"), ("PAYWARDEN_MAX_CONNECTIONS_PER_CLIENT", "0"),
        ] {
            let error = await #expect(throws: ConfigurationError.self) { try await PaywardenSettings.load(environment: [variable: value]) }
            #expect(error?.message.contains(variable) == true)
        }
    }
}

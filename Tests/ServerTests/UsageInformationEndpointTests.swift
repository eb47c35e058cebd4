import Crypto
import Foundation
import PaywardenTesting
import Testing

/// Usage information over HTTP: the merchant's PUT (scope `merchant-tokens`) and the device's GET
/// with Apple's authorization scheme, against the stand-in gateway holding the device key.
extension MerchantTokenEndpointTests {
    static let usageDocument = Array(
        (#"{"schemaVersion":1,"merchantName":"Example","merchantTokenIdentifier":"DNITHE302409093402145671","#
            + #""modificationDate":"2026-09-20T10:00:00Z","pastPayments":[{"identifier":"p-1","paymentDate":"2026-09-01","#
            + #""totalAmount":{"amount":"12.99","currency":"USD"}}]}"#).utf8)

    @Test func usageInformationIsPublishedAndServedToTheDeviceOnly() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            _ = try await vaultedMerchantToken(server)
            let device = fixture.apple.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            let path = "/v1/merchant-tokens/\(Self.merchantTokenID)/usage-information?merchantId=\(Self.merchantID)"

            let invalid = try await server.send(
                .PUT, path,
                body: Array(String(decoding: Self.usageDocument, as: UTF8.self).replacingOccurrences(of: "USD", with: "usd").utf8),
                apiKey: fixture.webKey)
            #expect(invalid.status == 400 && invalid.errorCode == "invalid_request", "\(invalid.text)")
            #expect(fixture.apple.usageNotifications.isEmpty)

            let published = try await server.send(.PUT, path, body: Self.usageDocument, apiKey: fixture.webKey)
            #expect(published.status == 200, "\(published.text)")
            #expect(try json(published)["state"] as? String == "published")
            let notification = try #require(fixture.apple.usageNotifications.last)
            #expect(notification.webServiceURL == "https://pay.example.com")

            let packagePath = "/v1/merchantToken/\(Self.merchantTokenID)/usageInformation"
            let fetched = try await server.send(
                .GET, packagePath, apiKey: .some(nil),
                headers: [("Authorization", "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")])
            #expect(fetched.status == 200, "\(fetched.text)")
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(fetched.body)) as? [String: String])
            let zip = try AppleGatewayStandIn.openEnvelope(
                fields, merchantTokenID: Self.merchantTokenID, device: device, merchantPublicKey: notification.merchantPublicKey)
            // A stored zip holds the document verbatim after its 30-byte local header and name.
            let name = Array("usageInformation.json".utf8)
            #expect(Array(zip[30..<(30 + name.count)]) == name)
            #expect(Array(zip[(30 + name.count)..<(30 + name.count + Self.usageDocument.count)]) == Self.usageDocument)

            for headers in [[("Authorization", "ApplePayMerchantTokenUsageInformation not-the-token")], []] {
                let refused = try await server.send(.GET, packagePath, apiKey: .some(nil), headers: headers)
                #expect(refused.status == 401, "\(refused.text)")
                #expect(try json(refused)["statusCode"] as? Int == 401)
                #expect(!refused.text.contains(fields["data"] ?? "-"))
            }
            let unknown = try await server.send(
                .GET, "/v1/merchantToken/DNITHE000000000000000000/usageInformation", apiKey: .some(nil),
                headers: [("Authorization", "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")])
            #expect(unknown.status == 401, "\(unknown.text)")

            // The PUT needs the merchant-tokens scope's key.
            let anonymous = try await server.send(.PUT, path, body: Self.usageDocument, apiKey: .some(nil))
            #expect(anonymous.status == 401)
        }
    }
}

extension MerchantTokenEndpointTests {
    /// `multipart/form-data`: the document and the package's images and strings, which the device
    /// finds in the zip it opens (read back by Info-ZIP's unzip).
    @Test func usageInformationCarriesImagesAsFormParts() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            _ = try await vaultedMerchantToken(server)
            let device = fixture.apple.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            let path = "/v1/merchant-tokens/\(Self.merchantTokenID)/usage-information?merchantId=\(Self.merchantID)"
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<200).map { UInt8($0) }
            let strings = Array(#""plan" = "Formule";"#.utf8)
            let boundary = "paywarden-test-boundary"
            func part(_ disposition: String, _ body: [UInt8]) -> [UInt8] {
                Array("--\(boundary)\r\nContent-Disposition: form-data; \(disposition)\r\n\r\n".utf8) + body + Array("\r\n".utf8)
            }
            let form =
                part(#"name="usageInformation""#, Self.usageDocument) + part(#"name="file"; filename="merchantLogo@2x.png""#, png)
                + part(#"name="file"; filename="fr.lproj/usageInformation.strings""#, strings) + Array("--\(boundary)--\r\n".utf8)
            let contentType = "multipart/form-data; boundary=\(boundary)"

            let published = try await server.send(.PUT, path, body: form, apiKey: fixture.webKey, contentType: contentType)
            #expect(published.status == 200, "\(published.text)")
            let notification = try #require(fixture.apple.usageNotifications.last)
            let fetched = try await server.send(
                .GET, "/v1/merchantToken/\(Self.merchantTokenID)/usageInformation", apiKey: .some(nil),
                headers: [("Authorization", "ApplePayMerchantTokenUsageInformation \(notification.authenticationToken)")])
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(fetched.body)) as? [String: String])
            let zip = try AppleGatewayStandIn.openEnvelope(
                fields, merchantTokenID: Self.merchantTokenID, device: device, merchantPublicKey: notification.merchantPublicKey)
            let archive = FileManager.default.temporaryDirectory.appendingPathComponent("usage-\(UUID().uuidString).zip")
            try Data(zip).write(to: archive)
            defer { try? FileManager.default.removeItem(at: archive) }
            #expect(try Self.unzip(archive, "usageInformation.json") == Self.usageDocument)
            #expect(try Self.unzip(archive, "merchantLogo@2x.png") == png)
            #expect(try Self.unzip(archive, "fr.lproj/usageInformation.strings") == strings)

            // A file outside the package's layout, a form without the document, a broken form: 400.
            for (body, why) in [
                (
                    part(#"name="usageInformation""#, Self.usageDocument) + part(#"name="file"; filename="../x.png""#, png)
                        + Array("--\(boundary)--\r\n".utf8), "files["
                ),
                (part(#"name="file"; filename="logo.png""#, png) + Array("--\(boundary)--\r\n".utf8), "no part named usageInformation"),
                (part(#"name="usageInformation""#, Self.usageDocument), "no closing boundary"),
            ] {
                let refused = try await server.send(.PUT, path, body: body, apiKey: fixture.webKey, contentType: contentType)
                #expect(refused.status == 400 && refused.text.contains(why), "\(refused.text)")
            }
        }
    }

    static func unzip(_ archive: URL, _ member: String) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unzip")
        process.arguments = ["-p", archive.path, member]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(output)
    }
}

extension MerchantTokenEndpointTests {
    /// A device's fetch says nothing about merchant tokens it holds no token for: with Apple's
    /// scheme, an unknown merchant token, one with nothing published and a published one with a
    /// wrong authentication token are answered alike; and failures are limited per client address,
    /// while a device presenting its token is never counted.
    @Test func theDevicesFetchIsNoExistenceOracleAndFailuresAreLimitedPerAddress() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            _ = try await vaultedMerchantToken(server)
            _ = fixture.apple.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            let put = "/v1/merchant-tokens/\(Self.merchantTokenID)/usage-information?merchantId=\(Self.merchantID)"
            #expect(try await server.send(.PUT, put, body: Self.usageDocument, apiKey: fixture.webKey).status == 200)
            let token = try #require(fixture.apple.usageNotifications.last?.authenticationToken)
            func fetch(_ merchantTokenID: String, _ authenticationToken: String) async throws -> TestServer.Reply {
                try await server.send(
                    .GET, "/v1/merchantToken/\(merchantTokenID)/usageInformation", apiKey: .some(nil),
                    headers: [("Authorization", "ApplePayMerchantTokenUsageInformation \(authenticationToken)")])
            }

            // The device itself, however often it asks: never limited.
            for _ in 0..<25 { #expect(try await fetch(Self.merchantTokenID, token).status == 200) }

            let published = try await fetch(Self.merchantTokenID, "not-the-token")
            let unknown = try await fetch("DNITHE000000000000000000", token)
            #expect(published.status == 401, "\(published.text)")
            #expect(unknown.status == published.status && unknown.body == published.body, "\(unknown.status) \(unknown.text)")

            // More failures from this address: refused before any look-up, even the right token.
            var limited: TestServer.Reply?
            for attempt in 0..<40 {
                let reply = try await fetch("DNITHE\(String(format: "%018d", attempt))", token)
                if reply.status == 429 {
                    limited = reply
                    break
                }
                #expect(reply.status == 401, "\(reply.text)")
            }
            let refused = try #require(limited, "40 failed fetches from one address were never limited")
            #expect(refused.header("retry-after") != nil)
            #expect(try json(refused)["statusCode"] as? Int == 429, "\(refused.text)")
            #expect(try await fetch(Self.merchantTokenID, token).status == 429)
        }
    }
}

extension MerchantTokenEndpointTests {
    /// The merchant token's MPAN vaulted for the organisation `rival` too, through a paypage of its
    /// own for the same merchant: two organisations hold one merchant token.
    func vaultedForRival(_ server: TestServer) async throws {
        _ = try await server.server.vault.createPaypage(
            id: "rivalShop", organization: "rival", merchantIdentifiers: [Self.merchantID], reportGroups: [], tokenFormat: .d)
        let registered = try await server.send(
            .POST, "/eProtect/paypage",
            body: try EProtectForms.form(
                token: try server.ecToken(payload: PaymentPayloads.merchantToken(pan: Self.pan)), paypageID: "rivalShop",
                reportGroup: "mobile"),
            apiKey: .some(nil), contentType: "application/x-www-form-urlencoded")
        let id = try #require(try json(registered)["paypageRegistrationId"] as? String, "\(registered.text)")
        let redeemed = try await server.send(.POST, "/v1/registrations/\(id)/redeem", apiKey: server.rivalKey)
        #expect(redeemed.status == 200, "\(redeemed.text)")
    }

    /// Two organisations holding one merchant token publish at once, Apple's answer with the
    /// device's key held until both asked: the first to record it owns the package, the other is
    /// refused before Apple is told anything, and the device is served the owner's.
    @Test func twoOrganisationsPublishingForOneMerchantTokenAtOnceLeaveItWithOne() async throws {
        try await withFixture { fixture in
            let server = fixture.server
            _ = try await vaultedMerchantToken(server)
            try await vaultedForRival(server)
            _ = fixture.apple.setUsageInformationDevice(merchantTokenID: Self.merchantTokenID)
            let path = "/v1/merchant-tokens/\(Self.merchantTokenID)/usage-information?merchantId=\(Self.merchantID)"
            let rivalDocument = Array(
                String(decoding: Self.usageDocument, as: UTF8.self).replacingOccurrences(
                    of: #""merchantName":"Example""#, with: #""merchantName":"Rival""#
                ).utf8)

            let gate = fixture.apple.holdAnswers(toPathsEndingWith: "/merchantToken/publicKey")
            let example = Task { try await server.send(.PUT, path, body: Self.usageDocument, apiKey: fixture.webKey) }
            try await gate.waitUntilHeld(1)
            let rival = Task { try await server.send(.PUT, path, body: rivalDocument, apiKey: fixture.rivalWebKey) }
            try await gate.waitUntilHeld(2)
            gate.release()
            let replies = [("example", try await example.value), ("rival", try await rival.value)]

            let published = replies.filter { $0.1.status == 200 }
            #expect(published.count == 1, "\(replies.map { "\($0.0): \($0.1.status) \($0.1.text)" })")
            let refused = replies.filter { $0.1.status != 200 }
            #expect(refused.allSatisfy { $0.1.status == 403 && $0.1.errorCode == "merchant_not_authorized" }, "\(refused.map(\.1.text))")
            #expect(fixture.apple.usageNotifications.count == 1, "Apple was told of \(fixture.apple.usageNotifications.count) packages")
            let stored = try await server.server.database.database.usageInformation(merchantTokenID: Self.merchantTokenID)
            #expect(stored?.organization.rawValue == published.first?.0, "owned by \(stored?.organization.rawValue ?? "nobody")")
            let token = try #require(fixture.apple.usageNotifications.last?.authenticationToken)
            let fetched = try await server.send(
                .GET, "/v1/merchantToken/\(Self.merchantTokenID)/usageInformation", apiKey: .some(nil),
                headers: [("Authorization", "ApplePayMerchantTokenUsageInformation \(token)")])
            #expect(fetched.status == 200, "the package Apple was told of is the one served: \(fetched.text)")
        }
    }
}

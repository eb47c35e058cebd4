import ApplePay
import Foundation
import Testing

/// Apple's `UsageInformation` schema as the validator enforces it (stand-in case U13), and the
/// package's zip, read back by Info-ZIP's `unzip` (an implementation independent of ours).
struct UsageInformationDocumentTests {
    static let token = "DNITHE000000000000000042"
    static let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21

    /// A document using every member Apple defines.
    nonisolated(unsafe) static let complete: [String: Any] = [
        "schemaVersion": 1, "merchantName": "Example Streaming", "merchantTokenIdentifier": token,
        "modificationDate": "2026-09-20T10:00:00Z", "expirationDate": "2027-06-01T00:00:00+02:00", "merchantLogoName": "merchantLogo",
        "otherUsageDescription": "Falls back to your other card", "paymentIssueRecoveryURL": "https://example.com/billing",
        "pastPayments": [
            [
                "identifier": "p-1", "paymentDate": "2026-09-01", "totalAmount": ["amount": "12.99", "currency": "USD"],
                "lineItems": [["label": "Premium", "amount": ["amount": "12.99", "currency": "USD"], "imageName": "premium"]],
                "summaryItems": [["label": "Total", "amount": ["amount": "12.99", "currency": "USD"]]],
            ]
        ],
        "upcomingPayments": [
            [
                "identifier": "u-1", "label": "Premium", "paymentType": "recurring", "imageName": "premium",
                "recurringPaymentDetails": [
                    "recurringPaymentType": "subscription", "interval": ["unit": "month", "count": 1],
                    "scheduledPayments": [["paymentDate": "2026-10-01", "amount": ["amount": "12.99", "currency": "USD"]]],
                    "endsAfterLastPayment": false,
                ],
                "paymentIssueDetails": ["issueKind": "paymentDeclined", "issueDate": "2026-09-02"],
            ],
            ["identifier": "u-2", "label": "Rental", "paymentType": "deferred", "deferredPaymentDetails": ["paymentDate": "2026-12-24"]],
            [
                "identifier": "u-3", "label": "Top-up", "paymentType": "automaticReload",
                "automaticReloadPaymentDetails": [
                    "amount": ["amount": "25.00", "currency": "EUR"], "thresholdAmount": ["amount": "5", "currency": "EUR"],
                ],
            ],
        ],
    ]

    static func encode(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    let validator = UsageInformationValidator(merchantTokenIdentifier: token, now: now)

    @Test func aCompleteDocumentPassesUnchanged() throws {
        let document = Self.encode(Self.complete)
        #expect(try validator.validate(document) == document)
    }

    /// Each change breaks one rule; the error names the member.
    nonisolated(unsafe) static let refusals: [(String, (inout [String: Any]) -> Void)] = [
        ("schemaVersion", { $0["schemaVersion"] = 2 }),
        ("schemaVersion", { $0["schemaVersion"] = "1" }),
        ("merchantName", { $0["merchantName"] = nil }),
        ("merchantTokenIdentifier", { $0["merchantTokenIdentifier"] = "DNITHE000000000000000043" }),
        ("modificationDate", { $0["modificationDate"] = "yesterday" }),
        // Foundation's parser takes these spellings, and traps on a fraction of 35 digits: refused before it.
        ("modificationDate", { $0["modificationDate"] = "2026-09-20T10:00:00." + String(repeating: "1", count: 35) + "Z" }),
        ("modificationDate", { $0["modificationDate"] = "2026-09-20T10:00:00.1234567890Z" }),
        ("modificationDate", { $0["modificationDate"] = "2026-9-20T10:00:00Z" }),
        ("modificationDate", { $0["modificationDate"] = "2026-09-20T24:00:00Z" }),
        ("modificationDate", { $0["modificationDate"] = "2026-09-20T10:00:00+0530" }),
        ("pastPayments[0].paymentDate", { Self.editPast(&$0) { $0["paymentDate"] = "2026/09/01" } }),
        ("expirationDate", { $0["expirationDate"] = "2028-01-01T00:00:00Z" }),
        ("paymentIssueRecoveryURL", { $0["paymentIssueRecoveryURL"] = "http://example.com" }),
        ("favouriteColour", { $0["favouriteColour"] = "blue" }),
        ("pastPayments[0].totalAmount.amount", { Self.editPast(&$0) { $0["totalAmount"] = ["amount": 12.99, "currency": "USD"] } }),
        ("pastPayments[0].totalAmount.currency", { Self.editPast(&$0) { $0["totalAmount"] = ["amount": "1", "currency": "usd"] } }),
        ("pastPayments[0].paymentDate", { Self.editPast(&$0) { $0["paymentDate"] = "01/09/2026" } }),
        ("upcomingPayments[0].paymentType", { Self.editUpcoming(&$0) { $0["paymentType"] = "weekly" } }),
        ("upcomingPayments[0].recurringPaymentDetails", { Self.editUpcoming(&$0) { $0["recurringPaymentDetails"] = nil } }),
        ("upcomingPayments[0].deferredPaymentDetails", { Self.editUpcoming(&$0) { $0["deferredPaymentDetails"] = [:] } }),
        (
            "upcomingPayments[0].recurringPaymentDetails.recurringPaymentType",
            { Self.editRecurring(&$0) { $0["recurringPaymentType"] = "lease" } }
        ),
        (
            "upcomingPayments[0].recurringPaymentDetails.interval.unit",
            { Self.editRecurring(&$0) { $0["interval"] = ["unit": "fortnight"] } }
        ),
        (
            "upcomingPayments[0].recurringPaymentDetails.interval.count",
            { Self.editRecurring(&$0) { $0["interval"] = ["unit": "month", "count": 0] } }
        ),
        (
            "upcomingPayments[0].paymentIssueDetails.issueKind",
            { Self.editUpcoming(&$0) { $0["paymentIssueDetails"] = ["issueKind": "expired", "issueDate": "2026-09-02"] } }
        ),
    ]

    @Test func eachRuleOfTheSchemaIsEnforced() throws {
        for (path, change) in Self.refusals {
            var document = Self.complete
            change(&document)
            #expect(throws: UsageInformationError.self, "\(path)") { try validator.validate(Self.encode(document)) }
            do {
                _ = try validator.validate(Self.encode(document))
            } catch {
                #expect(error.path == path, "\(error)")
            }
        }
        #expect(throws: UsageInformationError.self) { try validator.validate(Array("[]".utf8)) }
        #expect(throws: UsageInformationError.self) { try validator.validate(Array(#"{"schemaVersion":1,"schemaVersion":1}"#.utf8)) }
    }

    static func editPast(_ document: inout [String: Any], _ change: (inout [String: Any]) -> Void) {
        var payments = document["pastPayments"] as! [[String: Any]]
        change(&payments[0])
        document["pastPayments"] = payments
    }

    static func editUpcoming(_ document: inout [String: Any], _ change: (inout [String: Any]) -> Void) {
        var payments = document["upcomingPayments"] as! [[String: Any]]
        change(&payments[0])
        document["upcomingPayments"] = payments
    }

    static func editRecurring(_ document: inout [String: Any], _ change: (inout [String: Any]) -> Void) {
        editUpcoming(&document) { payment in
            var details = payment["recurringPaymentDetails"] as! [String: Any]
            change(&details)
            payment["recurringPaymentDetails"] = details
        }
    }

    @Test func thePackageIsAZipThatUnzipReads() throws {
        let document = Self.encode(Self.complete)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<300).map { UInt8($0 % 251) }
        let package = try UsageInformationPackage(
            usageInformation: document,
            files: ["merchantLogo@2x.png": png, "fr.lproj/usageInformation.strings": Array(#""premium" = "Premium";"#.utf8)])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("usage-package-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let archive = directory.appendingPathComponent("package.zip")
        try Data(package.zip).write(to: archive)

        #expect(try Self.unzip(["-Z1", archive.path]) == "usageInformation.json\nfr.lproj/usageInformation.strings\nmerchantLogo@2x.png\n")
        #expect(Array(try Self.unzipBytes(["-p", archive.path, "usageInformation.json"])) == document)
        #expect(Array(try Self.unzipBytes(["-p", archive.path, "merchantLogo@2x.png"])) == png)
        #expect(try Self.unzip(["-t", archive.path]).contains("No errors detected"))

        for path in ["../evil.png", "logo.gif", "a/b/c.png", "FR.lproj/logo.png", "logo@4x.png"] {
            #expect(throws: UsageInformationError.self, "\(path)") {
                try UsageInformationPackage(usageInformation: document, files: [path: png])
            }
        }
        #expect(throws: UsageInformationError.self) {
            try UsageInformationPackage(usageInformation: document, files: ["logo.png": [1, 2, 3]])
        }
        let big = png + [UInt8](repeating: 0, count: UsageInformationPackage.maximumSourceBytes)
        #expect(throws: UsageInformationError.self) { try UsageInformationPackage(usageInformation: document, files: ["logo.png": big]) }
    }

    static func unzipBytes(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unzip")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }

    static func unzip(_ arguments: [String]) throws -> String {
        String(decoding: try unzipBytes(arguments), as: UTF8.self)
    }
}

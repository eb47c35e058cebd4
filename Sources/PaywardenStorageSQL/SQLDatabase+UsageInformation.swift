import Foundation
import PaywardenStorage

extension SQLDatabase: UsageInformationStore {
    static var usageInformationColumns: [String] {
        [
            "merchant_token_id", "merchant_identifier", "organization", "state", "package", "package_response",
            "authentication_token_hash", "updated_at", "revision",
        ]
    }
    static var senderKeyColumns: [String] {
        ["merchant_identifier", "custody", "hsm_key_id", "public_key", "wrapped_seed", "wrap_path", "created_at"]
    }

    public func usageInformationSenderKey(merchantID: String) async throws(StorageError) -> UsageInformationSenderKeyRecord? {
        let rows = try await read(
            "SELECT \(Self.senderKeyColumns.joined(separator: ", ")) FROM usage_information_sender_keys WHERE merchant_identifier = $1",
            [.text(merchantID)])
        return try rows.first.map { row throws(StorageError) in
            let reader = SQLRowReader(row, columns: Self.senderKeyColumns, table: "usage_information_sender_keys")
            return UsageInformationSenderKeyRecord(
                merchantID: try reader.text(0), custody: try reader.text(1), hsmKeyID: try reader.text(2), publicKey: try reader.bytes(3),
                wrappedSeed: try reader.optionalBytes(4), wrapPath: try reader.optionalText(5), createdAt: try reader.date(6))
        }
    }

    public func createUsageInformationSenderKey(_ record: UsageInformationSenderKeyRecord) async throws(StorageError) {
        _ = try await write(
            "INSERT INTO usage_information_sender_keys (\(Self.senderKeyColumns.joined(separator: ", "))) "
                + "VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [
                .text(record.merchantID), .text(record.custody), .text(record.hsmKeyID), .blob(record.publicKey),
                SQLValue(record.wrappedSeed), SQLValue(record.wrapPath), SQLValue(record.createdAt),
            ])
    }

    public func usageInformation(merchantTokenID: String) async throws(StorageError) -> UsageInformationRecord? {
        let rows = try await read(
            "SELECT \(Self.usageInformationColumns.joined(separator: ", ")) FROM usage_information WHERE merchant_token_id = $1",
            [.text(merchantTokenID)])
        return try rows.first.map { row throws(StorageError) in
            let reader = SQLRowReader(row, columns: Self.usageInformationColumns, table: "usage_information")
            return UsageInformationRecord(
                merchantTokenID: try reader.text(0), merchantID: try reader.text(1), organization: try reader.organization(2),
                state: try reader.choice(3, as: UsageInformationRecord.State.self), package: try reader.bytes(4),
                packageResponse: try reader.optionalBytes(5), authenticationTokenHash: try reader.optionalBytes(6),
                updatedAt: try reader.date(7), revision: try reader.integer(8))
        }
    }

    public func saveUsageInformation(
        _ record: UsageInformationRecord, replacing expected: UsageInformationRecord?
    ) async throws(StorageError) -> Bool {
        let values: [SQLValue] = [
            .text(record.merchantTokenID), .text(record.merchantID), .text(record.organization), .text(record.state.rawValue),
            .blob(record.package), SQLValue(record.packageResponse), SQLValue(record.authenticationTokenHash), SQLValue(record.updatedAt),
            SQLValue(record.revision),
        ]
        guard let expected else {
            let rows = try await write(
                "INSERT INTO usage_information (\(Self.usageInformationColumns.joined(separator: ", "))) "
                    + "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (merchant_token_id) DO NOTHING RETURNING 1", values)
            return !rows.isEmpty
        }
        let rows = try await write(
            """
            UPDATE usage_information SET merchant_identifier = $2, organization = $3, state = $4, package = $5, package_response = $6,
              authentication_token_hash = $7, updated_at = $8, revision = $9
            WHERE merchant_token_id = $1 AND revision = $10 RETURNING 1
            """, values + [SQLValue(expected.revision)])
        return !rows.isEmpty
    }

    public func deleteUsageInformation(merchantTokenID: String) async throws(StorageError) -> Bool {
        !(try await write("DELETE FROM usage_information WHERE merchant_token_id = $1 RETURNING 1", [.text(merchantTokenID)])).isEmpty
    }

    public func deleteUsageInformation(replacing expected: UsageInformationRecord) async throws(StorageError) -> Bool {
        !(try await write(
            "DELETE FROM usage_information WHERE merchant_token_id = $1 AND revision = $2 RETURNING 1",
            [.text(expected.merchantTokenID), SQLValue(expected.revision)])).isEmpty
    }
}

import Foundation
import PaywardenPrimitives
import PaywardenStorage

/// Reads one row's columns by position, turning a value of the wrong type into a `.corrupt`
/// error that names the table, the row and the column, never a crash.
struct SQLRowReader {
    let values: [SQLValue]
    let columns: [String]
    let table: String
    /// The row's key as operators may read it; set once the key columns are read.
    var row: String

    init(_ values: [SQLValue], columns: [String], table: String, row: String = "?") {
        self.values = values
        self.columns = columns
        self.table = table
        self.row = row
    }

    private func value(_ index: Int) throws(StorageError) -> SQLValue {
        guard index < values.count else {
            throw StorageError(.corrupt, "the row has \(values.count) columns, \(columns.count) expected", table: table, row: row)
        }
        return values[index]
    }

    private func mismatch(_ index: Int, _ expected: String, _ found: SQLValue) -> StorageError {
        StorageError.unreadable(columns[index], in: table, row: row, "\(found.typeName) where \(expected) belongs")
    }

    func text(_ index: Int) throws(StorageError) -> String {
        guard case .text(let text) = try value(index) else { throw mismatch(index, "text", try value(index)) }
        return text
    }

    func optionalText(_ index: Int) throws(StorageError) -> String? {
        if case .null = try value(index) { return nil }
        return try text(index)
    }

    func organization(_ index: Int) throws(StorageError) -> OrganizationID { OrganizationID(try text(index)) }

    func optionalOrganization(_ index: Int) throws(StorageError) -> OrganizationID? { try optionalText(index).map { OrganizationID($0) } }

    func integer(_ index: Int) throws(StorageError) -> Int {
        guard case .integer(let value) = try value(index), let integer = Int(exactly: value) else {
            throw mismatch(index, "an integer", try value(index))
        }
        return integer
    }

    func optionalInteger(_ index: Int) throws(StorageError) -> Int? {
        if case .null = try value(index) { return nil }
        return try integer(index)
    }

    func bytes(_ index: Int) throws(StorageError) -> [UInt8] {
        guard case .blob(let bytes) = try value(index) else { throw mismatch(index, "bytes", try value(index)) }
        return bytes
    }

    func optionalBytes(_ index: Int) throws(StorageError) -> [UInt8]? {
        if case .null = try value(index) { return nil }
        return try bytes(index)
    }

    func date(_ index: Int) throws(StorageError) -> Date {
        Date(timeIntervalSince1970: TimeInterval(try integer(index)) / 1000)
    }

    func optionalDate(_ index: Int) throws(StorageError) -> Date? {
        try optionalInteger(index).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
    }

    func flag(_ index: Int) throws(StorageError) -> Bool {
        switch try integer(index) {
        case 0: return false
        case 1: return true
        case let other: throw StorageError.unreadable(columns[index], in: table, row: row, "\(other) where 0 or 1 belongs")
        }
    }

    /// A text column holding one of `Value`'s raw values.
    func choice<Value: RawRepresentable<String> & CaseIterable>(_ index: Int, as type: Value.Type) throws(StorageError) -> Value {
        let text = try text(index)
        guard let value = Value(rawValue: text) else {
            let known = Value.allCases.map(\.rawValue).joined(separator: ", ")
            throw StorageError.unreadable(columns[index], in: table, row: row, "\"\(text)\", not one of \(known)")
        }
        return value
    }

    /// A text column holding a JSON array of strings.
    func stringList(_ index: Int) throws(StorageError) -> [String] {
        let text = try text(index)
        guard let list = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else {
            throw StorageError.unreadable(columns[index], in: table, row: row, "text that is not a JSON list of strings")
        }
        return list
    }
}

extension SQLValue {
    /// A list of strings as JSON text.
    static func stringList(_ list: [String]) -> SQLValue {
        let data = (try? JSONEncoder().encode(list)) ?? Data("[]".utf8)
        return .text(String(decoding: data, as: UTF8.self))
    }
}

/// How a table is declared, as a copy between engines needs it: its columns, which hold text
/// (ordered byte for byte, whatever the engine's collation), which may be NULL, and its primary key.
public struct SQLTableLayout: Sendable, Hashable {
    public struct Column: Sendable, Hashable {
        public var name: String
        public var isText: Bool
        public var isNullable: Bool

        public init(name: String, isText: Bool, isNullable: Bool) {
            self.name = name
            self.isText = isText
            self.isNullable = isNullable
        }
    }

    public var table: String
    /// In the order the engine declares them.
    public var columns: [Column]
    /// The primary key's column names, in the key's order.
    public var primaryKey: [String]

    public init(table: String, columns: [Column], primaryKey: [String]) {
        self.table = table
        self.columns = columns
        self.primaryKey = primaryKey
    }

    /// The columns by name: the same order on every engine, whatever order the migrations added them in.
    public var canonicalColumns: [Column] { columns.sorted { $0.name < $1.name } }
}

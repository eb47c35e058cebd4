import PaywardenStorage
import PaywardenStorageSQL
import Testing

struct SchemaDDLTests {
    @Test("every migration has statements, creates every table, and leaves no placeholder behind")
    func everyMigrationIsComplete() {
        let types = SchemaDDL.Types(bytes: "B", integer: "I", flag: "F", withoutRowID: " W")
        let statements = Schema.migrations.flatMap { SchemaDDL.statements($0, types) }
        for migration in Schema.migrations { #expect(!SchemaDDL.statements(migration, types).isEmpty, "\(migration)") }
        #expect(!statements.contains { $0.contains("{") || $0.contains("}") })
        for table in Schema.tables { #expect(statements.contains { $0.contains("CREATE TABLE \(table) (") }, "\(table)") }
    }
}

-- The tables of versions 5 to 8 were made without the table options, so on
-- MariaDB they took the server's default engine and collation (often a
-- case-insensitive one). They become InnoDB comparing utf8mb4 text byte for
-- byte, like every other table. SQLite has nothing to change.
{{convert_table cluster_credentials}};
{{convert_table locks}};
{{convert_table list_generations}};
{{convert_table periodic_leases}};

mod common;

#[test]
fn mariadb_starts_and_answers() {
    use mysql::prelude::Queryable;
    let db = common::shared_db();
    let mut c = db.conn();
    let v: Option<String> = c.query_first("SELECT VERSION()").unwrap();
    assert!(v.unwrap().contains("MariaDB"));
}

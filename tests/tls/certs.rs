//! Test certificates made with rcgen: two CAs, server certificates for `localhost`/127.0.0.1 and
//! for another host name, and client certificates (one from the other CA), written as PEM files.
// Each test binary uses some of the certificates.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

pub struct Pki {
    /// The CA that signed every certificate below.
    pub ca: PathBuf,
    /// A CA that signed none of them.
    pub other_ca: PathBuf,
    /// Server certificate for localhost and 127.0.0.1, and its key.
    pub server: PathBuf,
    pub server_key: PathBuf,
    /// Server certificate naming only `db.example.invalid`.
    pub misnamed: PathBuf,
    pub misnamed_key: PathBuf,
    /// Client certificate (CN idgate-client) and its key.
    pub client: PathBuf,
    pub client_key: PathBuf,
    /// Client certificate with a whole name (country, state, organization, unit, a non-ASCII
    /// common name), and its key.
    pub named: PathBuf,
    pub named_key: PathBuf,
    /// Client certificate signed by the other CA, and its key.
    pub stranger: PathBuf,
    pub stranger_key: PathBuf,
}

fn ca(name: &str) -> (CertificateParams, KeyPair, String) {
    let key = KeyPair::generate().expect("CA key");
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.distinguished_name.push(DnType::CommonName, name);
    let pem = p.self_signed(&key).expect("CA cert").pem();
    (p, key, pem)
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    names: &[&str],
    cn: &str,
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    leaf_named(issuer, names, &[(DnType::CommonName, cn)], usage)
}

fn leaf_named(
    issuer: &Issuer<'_, KeyPair>,
    names: &[&str],
    dn: &[(DnType, &str)],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name = rcgen::DistinguishedName::new();
    for (t, v) in dn {
        p.distinguished_name.push(t.clone(), *v);
    }
    p.extended_key_usages = vec![usage];
    let cert = p.signed_by(&key, issuer).expect("sign");
    (cert.pem(), key.serialize_pem())
}

pub fn make(dir: &Path) -> Pki {
    std::fs::create_dir_all(dir).expect("cert dir");
    let write = |name: &str, pem: &str| {
        let p = dir.join(name);
        std::fs::write(&p, pem).expect("write pem");
        p
    };
    let (ca_params, ca_key, ca_pem) = ca("idgate test CA");
    let (other_params, other_key, other_pem) = ca("some other CA");
    let issuer = Issuer::new(ca_params, ca_key);
    let other_issuer = Issuer::new(other_params, other_key);
    let server = ExtendedKeyUsagePurpose::ServerAuth;
    let (s, sk) = leaf(
        &issuer,
        &["localhost", "127.0.0.1"],
        "localhost",
        server.clone(),
    );
    let (m, mk) = leaf(
        &issuer,
        &["db.example.invalid"],
        "db.example.invalid",
        server,
    );
    let (c, ck) = leaf(
        &issuer,
        &[],
        "idgate-client",
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let (n, nk) = leaf_named(
        &issuer,
        &[],
        &[
            (DnType::CountryName, "FI"),
            (DnType::StateOrProvinceName, "Uusimaa"),
            (DnType::OrganizationName, "Example Oy"),
            (DnType::OrganizationalUnitName, "payments"),
            (DnType::CommonName, "app-käyttäjä"),
        ],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let (x, xk) = leaf(
        &other_issuer,
        &[],
        "idgate-client",
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    Pki {
        named: write("named.pem", &n),
        named_key: write("named-key.pem", &nk),
        stranger: write("stranger.pem", &x),
        stranger_key: write("stranger-key.pem", &xk),
        ca: write("ca.pem", &ca_pem),
        other_ca: write("other-ca.pem", &other_pem),
        server: write("server.pem", &s),
        server_key: write("server-key.pem", &sk),
        misnamed: write("misnamed.pem", &m),
        misnamed_key: write("misnamed-key.pem", &mk),
        client: write("client.pem", &c),
        client_key: write("client-key.pem", &ck),
    }
}

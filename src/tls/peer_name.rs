//! A client certificate's subject and issuer, written as MariaDB compares them for REQUIRE
//! SUBJECT / REQUIRE ISSUER: OpenSSL's `X509_NAME_oneline` form, `/C=FI/O=Example/CN=app`
//! (what `openssl x509 -noout -subject -nameopt compat` prints). A user's `require_subject` is
//! compared with it byte for byte, as MariaDB does with `strcmp`.

use x509_parser::prelude::{FromDer, X509Certificate, X509Name};

/// The names of a verified client certificate; empty when they could not be read (a form this
/// parser does not know), which no `require_subject` matches since that is never empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerCert {
    pub subject: String,
    pub issuer: String,
}

impl PeerCert {
    /// The names in a DER certificate; `None` if it does not parse.
    pub fn from_der(der: &[u8]) -> Option<PeerCert> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        Some(PeerCert {
            subject: oneline(cert.subject()),
            issuer: oneline(cert.issuer()),
        })
    }
}

/// OpenSSL's short names of the attributes a distinguished name holds; another attribute is
/// written as its dotted OID, as OpenSSL does for one it has no name for.
const SHORT_NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.4", "SN"),
    ("2.5.4.5", "serialNumber"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "street"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.12", "title"),
    ("2.5.4.13", "description"),
    ("2.5.4.15", "businessCategory"),
    ("2.5.4.16", "postalAddress"),
    ("2.5.4.17", "postalCode"),
    ("2.5.4.18", "postOfficeBox"),
    ("2.5.4.41", "name"),
    ("2.5.4.42", "GN"),
    ("2.5.4.43", "initials"),
    ("2.5.4.44", "generationQualifier"),
    ("2.5.4.45", "x500UniqueIdentifier"),
    ("2.5.4.46", "dnQualifier"),
    ("2.5.4.65", "pseudonym"),
    ("2.5.4.97", "organizationIdentifier"),
    ("1.2.840.113549.1.9.1", "emailAddress"),
    ("0.9.2342.19200300.100.1.1", "UID"),
    ("0.9.2342.19200300.100.1.25", "DC"),
];

/// Universal tag of GeneralString, which OpenSSL reads as four bytes per character.
const GENERAL_STRING: u32 = 27;

/// `X509_NAME_oneline`: `/name=value` per attribute in order; bytes outside printable ASCII
/// written as `\xHH`.
fn oneline(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    for attr in name.iter_attributes() {
        let oid = attr.attr_type().to_id_string();
        let short = SHORT_NAMES
            .iter()
            .find(|(o, _)| *o == oid)
            .map_or(oid.as_str(), |(_, s)| s);
        out.push('/');
        out.push_str(short);
        out.push('=');
        let value = attr.attr_value();
        let data = value.data;
        let keep = four_byte_chars(value.tag().0, data);
        for (i, &b) in data.iter().enumerate() {
            if !keep[i & 3] {
                continue;
            }
            if (b' '..=b'~').contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("\\x{b:02X}"));
            }
        }
    }
    out
}

/// Which byte of every four OpenSSL writes: for a GeneralString of whole four-byte characters
/// whose first three bytes are all zero, only the fourth; otherwise every byte.
fn four_byte_chars(tag: u32, data: &[u8]) -> [bool; 4] {
    if tag != GENERAL_STRING || !data.len().is_multiple_of(4) {
        return [true; 4];
    }
    let wide = data.iter().enumerate().any(|(i, &b)| b != 0 && i & 3 != 3);
    if wide {
        [true; 4]
    } else {
        [false, false, false, true]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(dn: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in dn {
            p.distinguished_name.push(t.clone(), *v);
        }
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn names_read_as_openssl_writes_them() {
        use rcgen::DnType as T;
        let der = cert(&[
            (T::CountryName, "FI"),
            (T::StateOrProvinceName, "Uusimaa"),
            (T::OrganizationName, "Example Oy"),
            (T::OrganizationalUnitName, "db"),
            (T::CommonName, "app-1"),
        ]);
        let p = PeerCert::from_der(&der).unwrap();
        assert_eq!(p.subject, "/C=FI/ST=Uusimaa/O=Example Oy/OU=db/CN=app-1");
        // Self-signed: the issuer is the subject.
        assert_eq!(p.issuer, p.subject);
        let der = cert(&[
            (T::CommonName, "Jyväskylä"),
            (T::CustomDnType(vec![2, 5, 4, 99]), "x"),
        ]);
        assert_eq!(
            PeerCert::from_der(&der).unwrap().subject,
            "/CN=Jyv\\xC3\\xA4skyl\\xC3\\xA4/2.5.4.99=x"
        );
        assert_eq!(PeerCert::from_der(b"not a certificate"), None);
    }

    #[test]
    fn general_strings_of_four_byte_characters_keep_their_last_bytes() {
        assert_eq!(
            four_byte_chars(27, &[0, 0, 0, b'a', 0, 0, 0, b'b']),
            [false, false, false, true]
        );
        assert_eq!(four_byte_chars(27, &[0, 1, 0, b'a']), [true; 4]);
        assert_eq!(four_byte_chars(12, &[0, 0, 0, b'a']), [true; 4]);
    }
}

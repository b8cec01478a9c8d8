//! Real API descriptions at real size (tests/fixtures/specs): schemas are a graph, so recursive
//! components are checked to any depth and stubbed as recursive types.

use std::path::Path;

use crate::support::runtime::{chainsmith, repo, text};

/// A workspace holding Stripe's API description and one chain.
fn stripe_workspace(chain: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo("tests/fixtures/specs/stripe.com.json"), dir.path().join("stripe.json")).unwrap();
    std::fs::write(dir.path().join("chainsmith.toml"), "[[toolsets]]\nname = \"stripe\"\nopenapi = \"stripe.json\"\n")
        .unwrap();
    std::fs::write(dir.path().join("chain.py"), chain).unwrap();
    dir
}

/// Keys read five levels deep, through `anyOf` "expandable" fields that lead back to the objects
/// they came from (charge → customer → payment method, charge → invoice → customer).
const DEEP_CHAIN: &str = r#"from chainsmith.tools import stripe

charge = stripe.v1_charges_by_charge(charge="ch_1")
print(charge["billing_details"]["address"]["city"])
print(charge["billing_details"]["adress"]["city"])  # mistake: unknown-key
print(charge["customer"]["invoice_settings"]["default_payment_method"]["billing_details"]["email"])
print(charge["customer"]["invoice_settings"]["default_payment_method"]["billing_details"]["emial"])  # mistake: unknown-key
print(charge["outcome"]["risk_level"])
print(charge["outcome"]["risk_levle"])  # mistake: unknown-key
print(charge["payment_method_details"]["card"]["brand"])
print(charge["payment_method_details"]["card"]["brnad"])  # mistake: unknown-key
print(charge["invoice"]["customer"]["invoice_prefix"])
print(charge["invoice"]["customer"]["invoice_prefx"])  # mistake: unknown-key
print(charge["invoice"]["lines"]["data"][0]["amount"])
print(charge["invoice"]["lines"]["data"][0]["amont"])  # mistake: unknown-key
print(charge["invoice"]["lines"]["data"][0]["price"]["product"]["name"])
print(charge["invoice"]["lines"]["data"][0]["price"]["product"]["nmae"])  # mistake: unknown-key
"#;

#[test]
fn deep_key_mistakes_through_recursive_schemas_are_found() {
    let dir = stripe_workspace(DEEP_CHAIN);
    let out = chainsmith(dir.path(), &["check", "--format", "json", "chain.py"], &[]);
    let items: Vec<serde_json::Value> = serde_json::from_str(&text(&out.stdout)).expect("JSON diagnostics");
    let all: Vec<(u64, &str)> =
        items.iter().map(|d| (d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap())).collect();
    // Stripe marks `outcome`, `customer`, `invoice` … nullable: reading through them unchecked is
    // `possibly-null` (as basedpyright says on the stubs); the key mistakes are the subject here.
    assert!(all.contains(&(7, "possibly-null")), "{all:?}");
    let got: Vec<(u64, &str)> = all.into_iter().filter(|(_, code)| *code == "unknown-key").collect();
    let expected: Vec<(u64, &str)> = DEEP_CHAIN
        .lines()
        .enumerate()
        .filter_map(|(i, line)| Some((i as u64, line.split_once("# mistake: ")?.1)))
        .collect();
    assert_eq!(got, expected, "{}", text(&out.stdout));
    let keys = items.iter().filter(|d| d["code"] == "unknown-key");
    assert!(keys.clone().all(|d| d["message"].as_str().unwrap().contains("did you mean")), "{items:?}");
}

#[test]
fn stubs_name_recursive_schemas_once() {
    let dir = stripe_workspace("");
    let out = chainsmith(dir.path(), &["stubs", "--out", "typings"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stub = std::fs::read_to_string(Path::new(dir.path()).join("typings/chainsmith/tools/stripe.pyi")).unwrap();
    assert!(stub.contains("-> Charge:"), "a response names its schema");
    assert_eq!(stub.matches("\nclass Customer(TypedDict):").count(), 1, "one class per named schema");
    let charge = &stub[stub.find("\nclass Charge(TypedDict):").expect("Charge is a TypedDict")..];
    let charge = &charge[..charge[1..].find("\n\n").map_or(charge.len(), |i| i + 1)];
    assert!(charge.contains("customer: NotRequired[str | Customer | DeletedCustomer | None]"), "{charge}");
    assert!(charge.contains("invoice: NotRequired[str | Invoice | None]"), "{charge}");
    // Invoice leads back to Customer and Charge: recursion by name, never `Any` from a cut.
    let invoice = &stub[stub.find("\nclass Invoice(TypedDict):").expect("Invoice is a TypedDict")..];
    let invoice = &invoice[..invoice[1..].find("\n\n").map_or(invoice.len(), |i| i + 1)];
    assert!(invoice.contains("| Customer |"), "{invoice}");
}

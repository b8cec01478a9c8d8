//! Real API descriptions at real size (tests/fixtures/specs, each with its source and licence in
//! SOURCE.md): Stripe's recursive schemas checked to any depth and stubbed as recursive types,
//! GitHub's `operationId`s as aliases and its nullable users, Netlify's Swagger 2.0 read directly.

use std::path::Path;

use serde_json::json;

use crate::support::lsp::{TestClient, pos};
use crate::support::runtime::{chainsmith, repo, text};

/// A workspace holding one vendored API description as toolset `name`, and one chain.
fn spec_workspace(spec: &str, name: &str, chain: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo(&format!("tests/fixtures/specs/{spec}")), dir.path().join(spec)).unwrap();
    std::fs::write(
        dir.path().join("chainsmith.toml"),
        format!("[[toolsets]]\nname = \"{name}\"\nopenapi = \"{spec}\"\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("chain.py"), chain).unwrap();
    dir
}

fn stripe_workspace(chain: &str) -> tempfile::TempDir {
    spec_workspace("stripe.com.json", "stripe", chain)
}

/// `check --format json` on one program: (line, code) of every diagnostic, in order.
fn checked(dir: &Path, program: &str) -> Vec<(u64, String)> {
    let out = chainsmith(dir, &["check", "--format", "json", program], &[]);
    let items: Vec<serde_json::Value> = serde_json::from_str(&text(&out.stdout)).expect("JSON diagnostics");
    items
        .iter()
        .map(|d| (d["range"]["start"]["line"].as_u64().unwrap(), d["code"].as_str().unwrap().to_string()))
        .collect()
}

/// The `# mistake: code` comments of a program, as `checked` reports them.
fn planted(program: &str) -> Vec<(u64, String)> {
    program
        .lines()
        .enumerate()
        .flat_map(|(i, line)| {
            let codes = line.split_once("# mistake: ").map_or("", |(_, codes)| codes);
            codes.split(", ").filter(|c| !c.is_empty()).map(move |code| (i as u64, code.to_string()))
        })
        .collect()
}

/// `tools --format json`: every tool's name and aliases.
fn tools(dir: &Path) -> Vec<(String, Vec<String>)> {
    let out = chainsmith(dir, &["tools", "--format", "json"], &[]);
    let tools: Vec<serde_json::Value> = serde_json::from_str(&text(&out.stdout)).expect("JSON tools");
    tools
        .iter()
        .map(|t| {
            let aliases = t["aliases"].as_array().into_iter().flatten().map(|a| a.as_str().unwrap().to_string());
            (t["name"].as_str().unwrap().to_string(), aliases.collect())
        })
        .collect()
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

/// GitHub's pull requests, the way its documentation names the operations (`pulls_list`).
const GITHUB_CHAIN: &str = r#"from chainsmith.tools import github

prs = github.pulls_list(owner="octocat", repo="hello-world", state="open")
for pr in prs:
    if pr["user"]:
        print(pr["number"], pr["title"], pr["user"]["login"], pr["head"]["ref"])
pr = github.pulls_get(owner="octocat", repo="hello-world", pull_number=prs[0]["number"])
print(pr["merged"], pr["user"]["login"], pr["base"]["repo"]["full_name"])
files = github.pulls_list_files(owner="octocat", repo="hello-world", pull_number=pr["number"])
print(sum(f["additions"] for f in files))
repos = github.search_repos(q="language:rust stars:>1000")
print(repos["total_count"], [r["full_name"] for r in repos["items"]])
"#;

/// The same API through `requests`, matched by URL against GitHub's paths.
const GITHUB_REQUESTS: &str = r#"import requests

r = requests.get("https://api.github.com/repos/octocat/hello-world/pulls", params={"state": "closed"})
for pr in r.json():
    print(pr["number"], pr["merged_at"], pr["base"]["ref"])
one = requests.get("https://api.github.com/repos/octocat/hello-world/pulls/1").json()
print(one["mergeable_state"], one["head"]["sha"])
print(one["head"]["shaa"])  # mistake: unknown-key
requests.get("https://api.github.com/repos/octocat/hello-world/pulls", params={"state": "opened"})  # mistake: not-in-enum
"#;

const GITHUB_MISTAKES: &str = r#"from chainsmith.tools import github

prs = github.pulls_list(owner="octocat", repo="hello-world", state="opened")  # mistake: not-in-enum
print(prs[0]["user"]["login"])  # mistake: possibly-null
pr = github.pulls_gte(owner="octocat", repo="hello-world", pull_number=1)  # mistake: unknown-tool
pr = github.pulls_get(owner="octocat", repo="hello-world", pull_numbr=1)  # mistake: missing-argument, unknown-argument
print(prs[0]["head"]["repo"]["fullname"])  # mistake: unknown-key
"#;

#[test]
fn github_operation_ids_are_aliases_and_its_nullable_users_are_flagged() {
    let dir = spec_workspace("api.github.com.pulls.json", "github", GITHUB_CHAIN);
    let tools = tools(dir.path());
    assert_eq!(tools.len(), 35, "every operation of the trimmed description is a tool");
    let list = tools.iter().find(|(name, _)| name == "repos_pulls_by_owner_and_repo").expect("GET …/pulls");
    assert_eq!(list.1, ["pulls_list"]);
    assert!(checked(dir.path(), "chain.py").is_empty(), "the correct chain is clean");
    std::fs::write(dir.path().join("plain.py"), GITHUB_REQUESTS).unwrap();
    assert_eq!(checked(dir.path(), "plain.py"), planted(GITHUB_REQUESTS));
    std::fs::write(dir.path().join("mistakes.py"), GITHUB_MISTAKES).unwrap();
    assert_eq!(checked(dir.path(), "mistakes.py"), planted(GITHUB_MISTAKES));
    let out = chainsmith(dir.path(), &["check", "mistakes.py"], &[]);
    let report = text(&out.stdout);
    assert!(report.contains("no tool `pulls_gte`; did you mean `pulls_get`?"), "{report}");
    // The argument messages name the tool as written, not its path-derived primary name.
    assert!(report.contains("`pulls_get` is missing required argument `pull_number`"), "{report}");
    assert!(report.contains("`pulls_get` has no parameter `pull_numbr`; did you mean `pull_number`?"), "{report}");
}

#[test]
fn github_aliases_complete_in_the_editor() {
    let dir = spec_workspace("api.github.com.pulls.json", "github", "");
    let mut client = TestClient::in_process().workspace(dir).capabilities(json!({})).start();
    let uri = client.open("p.py", "from chainsmith.tools import github\n\ngithub.pulls_li\n");
    client.diagnostics(&uri, |p| p.version == Some(1));
    let items = client.completion_items(&uri, pos(2, 15));
    let item =
        items.iter().find(|i| i.label == "repos_pulls_by_owner_and_repo").unwrap_or_else(|| panic!("{items:#?}"));
    assert_eq!(item.label_details.as_ref().and_then(|d| d.description.as_deref()), Some("pulls_list"));
    assert!(item.filter_text.as_deref().is_some_and(|f| f.contains("pulls_list")), "{item:#?}");
    client.shutdown();
}

/// Netlify's Swagger 2.0 description: query enums declared on the path item, `definitions`
/// reached through `$ref`, a `body` parameter whose members are keyword arguments.
const NETLIFY_CHAIN: &str = r#"from chainsmith.tools import netlify

sites = netlify.list_sites(filter="all", per_page=50)
for site in sites:
    print(site["name"], site["ssl_url"], site["published_deploy"]["state"], site["build_settings"]["repo_url"])
deploys = netlify.list_site_deploys(site_id=sites[0]["id"], state="ready", branch="main")
print([d["deploy_ssl_url"] for d in deploys if not d["draft"]])
forms = netlify.list_site_forms(site_id=sites[0]["id"])
print(sum(f["submission_count"] for f in forms))
hook = netlify.create_hook_by_site_id(site_id=sites[0]["id"], type="email", event="deploy_failed", data={"email": "ops@example.com"})
print(hook["id"], hook["disabled"])
"#;

const NETLIFY_MISTAKES: &str = r#"from chainsmith.tools import netlify

sites = netlify.list_sites(filter="every")  # mistake: not-in-enum
print(sites[0]["published_deploy"]["stat"])  # mistake: unknown-key
deploys = netlify.list_site_deploys(site_id=sites[0]["id"], state="done")  # mistake: not-in-enum
print(deploys[0]["deploy_ssl"])  # mistake: unknown-key
netlify.list_site_forms(site=sites[0]["id"])  # mistake: missing-argument, unknown-argument
netlify.create_hook_by_site_id(site_id=1, type="email")  # mistake: wrong-type
"#;

#[test]
fn a_real_swagger_two_description_is_read_directly() {
    let dir = spec_workspace("netlify.swagger.json", "netlify", NETLIFY_CHAIN);
    let tools = tools(dir.path());
    assert_eq!(tools.len(), 181, "every operation of Netlify's 2.0 description is a tool");
    assert!(
        tools.iter().any(|(name, aliases)| name == "sites_deploys_by_site_id" && aliases == &["list_site_deploys"])
    );
    assert!(checked(dir.path(), "chain.py").is_empty(), "the correct chain is clean");
    std::fs::write(dir.path().join("mistakes.py"), NETLIFY_MISTAKES).unwrap();
    assert_eq!(checked(dir.path(), "mistakes.py"), planted(NETLIFY_MISTAKES));
}

/// Stripe through `requests`: the URL finds the operation, and its keys are checked as deep.
const STRIPE_REQUESTS: &str = r#"import requests

charge = requests.get("https://api.stripe.com/v1/charges/ch_1", auth=("sk_test", "")).json()
if charge["billing_details"]["address"]:
    print(charge["billing_details"]["address"]["city"])
print(charge["amount"], charge["currency"], charge["payment_method_details"]["type"])  # mistake: possibly-null
charges = requests.get("https://api.stripe.com/v1/charges", params={"limit": 3}).json()
print([c["id"] for c in charges["data"]])
print(charges["data"][0]["amout"])  # mistake: unknown-key
"#;

#[test]
fn stripe_through_requests_is_checked_as_deep() {
    let dir = stripe_workspace(STRIPE_REQUESTS);
    assert_eq!(checked(dir.path(), "chain.py"), planted(STRIPE_REQUESTS));
}

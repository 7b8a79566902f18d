//! Import cycles between the files of a crate, for CI (`.ci/run` runs the `patchbay-cycles`
//! binary over the repository and fails on a cycle it was not told to allow).
//!
//! A crate's module tree is read from its root file (`src/lib.rs`, `src/main.rs`) through its
//! `mod name;` declarations (`#[path]` honoured); inline modules belong to their file. Every
//! `use` and every path in the code that starts with `crate::`, `super::`, `self::`, a child
//! module's name or a name a `use` bound to a module is resolved as far as it names modules:
//! the file of the last module reached is what the path imports. A path naming an item another
//! module re-exports imports that module (a reader follows it there), while the re-export
//! itself (`pub use`, `pub(crate) use`) only hands a name on: it is an import of its source
//! where the re-exporting module uses the name in its own code, not otherwise (a crate root or
//! `mod.rs` that only lists its children's items is their face, not their dependant). A macro's
//! body is read when it parses as items, comma-separated expressions or statements (macro
//! definitions themselves are not read). A cycle is a strongly connected component of more than
//! one file.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("cycles-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
//! std::fs::write(dir.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
//! std::fs::write(dir.join("b.rs"), "pub struct B(crate::a::A);\n").unwrap();
//! let graph = patchbay_cycles::CrateGraph::read(&dir.join("lib.rs")).unwrap();
//! let cycles = graph.cycles();
//! assert_eq!(cycles.len(), 1);
//! assert_eq!(cycles[0].files.len(), 2);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Why a crate could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A file of the module tree could not be read.
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file of the module tree is not Rust that `syn` parses.
    Parse {
        /// The file.
        file: PathBuf,
        /// The parser's message.
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read { file, source } => write!(f, "cannot read {}: {source}", file.display()),
            Self::Parse { file, message } => write!(f, "cannot parse {}: {message}", file.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read { source, .. } => Some(source),
            Self::Parse { .. } => None,
        }
    }
}

/// One cycle: its files (sorted) and the imports that tie them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The files of the cycle, sorted.
    pub files: Vec<PathBuf>,
    /// Each import inside the cycle: from, to, and the names taken.
    pub ties: Vec<(PathBuf, PathBuf, Vec<String>)>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files: Vec<_> = self.files.iter().map(|p| p.display().to_string()).collect();
        writeln!(f, "cycle of {} files: {}", files.len(), files.join(" "))?;
        for (from, to, names) in &self.ties {
            writeln!(f, "  {} -> {}: {}", from.display(), to.display(), names.join(", "))?;
        }
        Ok(())
    }
}

/// A crate's files and the imports between them.
#[derive(Debug, Clone, Default)]
pub struct CrateGraph {
    files: Vec<PathBuf>,
    /// From file, to file: the names taken.
    edges: BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>,
}

/// One parsed file of the module tree.
struct Source {
    file: usize,
    syntax: syn::File,
    /// The module path of the file's top (from the crate root).
    module: Vec<String>,
}

impl CrateGraph {
    /// Reads the crate whose root file is `root` (`src/lib.rs`, `src/main.rs`).
    pub fn read(root: &Path) -> Result<Self, Error> {
        let mut graph = CrateGraph::default();
        let mut modules: HashMap<Vec<String>, usize> = HashMap::new();
        let mut sources = Vec::new();
        let mut queue = vec![(root.to_path_buf(), Vec::new(), true)];
        while let Some((path, module, owns_dir)) = queue.pop() {
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
                file: path.clone(),
                source,
            })?;
            let syntax = syn::parse_file(&text).map_err(|e| Error::Parse {
                file: path.clone(),
                message: e.to_string(),
            })?;
            let file = graph.files.len();
            graph.files.push(path.clone());
            // The folder of this file's child modules.
            let dir = match (owns_dir, path.parent()) {
                (true, Some(parent)) => parent.to_path_buf(),
                (false, Some(parent)) => parent.join(path.file_stem().unwrap_or_default()),
                (_, None) => PathBuf::new(),
            };
            let parent_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            declare(
                &syntax.items,
                &module,
                file,
                &dir,
                &parent_dir,
                &mut modules,
                &mut queue,
            );
            sources.push(Source { file, syntax, module });
        }
        for source in &sources {
            let mut reader = Reader {
                modules: &modules,
                scope: source.module.clone(),
                aliases: Vec::new(),
                reexports: Vec::new(),
                from: source.file,
                edges: &mut graph.edges,
            };
            reader.items(&source.syntax.items);
        }
        Ok(graph)
    }

    /// The files of the crate, in the order they were read (the root first).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Every cycle (strongly connected component of more than one file), files sorted.
    pub fn cycles(&self) -> Vec<Cycle> {
        let mut cycles: Vec<Cycle> = strongly_connected(self.files.len(), &self.edges)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let inside: BTreeSet<usize> = component.iter().copied().collect();
                let mut files: Vec<PathBuf> = inside.iter().map(|&i| self.files[i].clone()).collect();
                files.sort();
                let mut ties = Vec::new();
                for &from in &inside {
                    for (to, names) in self.edges.get(&from).into_iter().flatten() {
                        if inside.contains(to) {
                            ties.push((
                                self.files[from].clone(),
                                self.files[*to].clone(),
                                names.iter().cloned().collect(),
                            ));
                        }
                    }
                }
                ties.sort();
                Cycle { files, ties }
            })
            .collect();
        cycles.sort_by(|a, b| a.files.cmp(&b.files));
        cycles
    }
}

/// Notes the modules `items` declare (in module `module` of file `file`) and queues the files of
/// the outline ones.
fn declare(
    items: &[syn::Item],
    module: &[String],
    file: usize,
    dir: &Path,
    file_dir: &Path,
    modules: &mut HashMap<Vec<String>, usize>,
    queue: &mut Vec<(PathBuf, Vec<String>, bool)>,
) {
    modules.entry(module.to_vec()).or_insert(file);
    for item in items {
        let syn::Item::Mod(declared) = item else {
            continue;
        };
        let name = declared.ident.to_string();
        let mut child = module.to_vec();
        child.push(name.clone());
        if let Some((_, inner)) = &declared.content {
            modules.insert(child.clone(), file);
            declare(inner, &child, file, &dir.join(&name), file_dir, modules, queue);
            continue;
        }
        if let Some(path) = path_attribute(&declared.attrs) {
            let target = file_dir.join(path);
            if target.is_file() {
                queue.push((target, child, false));
            }
            continue;
        }
        let flat = dir.join(format!("{name}.rs"));
        let nested = dir.join(&name).join("mod.rs");
        if flat.is_file() {
            queue.push((flat, child, false));
        } else if nested.is_file() {
            queue.push((nested, child, true));
        }
    }
}

/// The value of a `#[path = "..."]` attribute.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(pair) if pair.path.is_ident("path") => match &pair.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => Some(text.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Reads one file's paths, resolving them against the module tree.
struct Reader<'a> {
    modules: &'a HashMap<Vec<String>, usize>,
    /// The module being read.
    scope: Vec<String>,
    /// Names that `use` items bound to modules, per scope level: (scope, name, module).
    aliases: Vec<(Vec<String>, String, Vec<String>)>,
    /// Names that `pub use` items hand on, per scope level: (scope, name, path).
    reexports: Vec<(Vec<String>, String, Vec<String>)>,
    from: usize,
    edges: &'a mut BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>,
}

impl Reader<'_> {
    fn items(&mut self, items: &[syn::Item]) {
        // Aliases first: a `use` binds its names for the whole module.
        for item in items {
            if let syn::Item::Use(used) = item {
                let mut paths = Vec::new();
                flatten(&used.tree, &mut Vec::new(), &mut paths);
                for (path, bound) in paths {
                    if let Some((module, rest)) = self.resolve(&path)
                        && rest.is_empty()
                        && let Some(name) = bound
                    {
                        self.aliases.push((self.scope.clone(), name, module));
                    }
                }
            }
        }
        for item in items {
            self.visit_item(item);
        }
    }

    /// The module a path names and what follows it, when the path starts in this crate.
    fn resolve(&self, segments: &[String]) -> Option<(Vec<String>, Vec<String>)> {
        let first = segments.first()?;
        let (mut base, rest) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (self.scope.clone(), &segments[1..]),
            "super" => {
                let mut base = self.scope.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                (base, rest)
            }
            name => {
                let mut child = self.scope.clone();
                child.push(name.to_owned());
                if self.modules.contains_key(&child) {
                    (self.scope.clone(), segments)
                } else {
                    let (_, _, module) = self
                        .aliases
                        .iter()
                        .rev()
                        .find(|(scope, alias, _)| alias == name && self.scope.starts_with(scope))?;
                    (module.clone(), &segments[1..])
                }
            }
        };
        let mut taken = 0;
        for segment in rest {
            base.push(segment.clone());
            if self.modules.contains_key(&base) {
                taken += 1;
            } else {
                base.pop();
                break;
            }
        }
        Some((base, rest[taken..].to_vec()))
    }

    fn note(&mut self, segments: &[String]) {
        let Some((module, rest)) = self.resolve(segments) else {
            return;
        };
        let Some(&to) = self.modules.get(&module) else {
            return;
        };
        if to != self.from {
            let name = rest
                .first()
                .cloned()
                .unwrap_or_else(|| module.last().cloned().unwrap_or_else(|| "crate".to_owned()));
            self.edges
                .entry(self.from)
                .or_default()
                .entry(to)
                .or_default()
                .insert(name);
        }
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if let Some((_, items)) = &module.content {
            self.scope.push(module.ident.to_string());
            self.items(items);
            self.scope.pop();
        }
    }

    fn visit_item_use(&mut self, used: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        flatten(&used.tree, &mut Vec::new(), &mut paths);
        let reexport = !matches!(used.vis, syn::Visibility::Inherited);
        for (path, bound) in paths {
            match (reexport, bound) {
                // Handed on: an import only where this module uses the name itself.
                (true, Some(name)) => self.reexports.push((self.scope.clone(), name, path)),
                (true, None) => {}
                (false, _) => self.note(&path),
            }
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        // A macro's body is read when it parses as items, as expressions separated by commas
        // (`format!`, `vec!`) or as statements.
        if let Ok(file) = syn::parse2::<syn::File>(mac.tokens.clone()) {
            for item in &file.items {
                self.visit_item(item);
            }
        } else if let Ok(exprs) =
            mac.parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        {
            for expr in &exprs {
                self.visit_expr(expr);
            }
        } else if let Ok(statements) = mac.parse_body_with(syn::Block::parse_within) {
            for statement in &statements {
                self.visit_stmt(statement);
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.note(&segments);
        }
        if let Some(first) = segments.first()
            && let Some((_, _, reexported)) = self
                .reexports
                .iter()
                .rev()
                .find(|(scope, name, _)| name == first && self.scope.starts_with(scope))
        {
            let reexported = reexported.clone();
            self.note(&reexported);
        }
        syn::visit::visit_path(self, path);
    }
}

/// Every path a `use` tree names, with the name it binds (`None` for a glob).
fn flatten(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) if name.ident == "self" => {
            out.push((prefix.clone(), prefix.last().cloned()));
        }
        syn::UseTree::Name(name) => {
            let mut path = prefix.clone();
            path.push(name.ident.to_string());
            out.push((path, Some(name.ident.to_string())));
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            if rename.ident != "self" {
                path.push(rename.ident.to_string());
            }
            out.push((path, Some(rename.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(group) => {
            for item in &group.items {
                flatten(item, prefix, out);
            }
        }
    }
}

/// Tarjan's strongly connected components of the graph of `n` nodes.
fn strongly_connected(n: usize, edges: &BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>) -> Vec<Vec<usize>> {
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn connect(v: usize, edges: &BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>, s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in edges.get(&v).map(|m| m.keys().collect::<Vec<_>>()).unwrap_or_default() {
            match s.index[w] {
                None => {
                    connect(w, edges, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let mut state = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            connect(v, edges, &mut state);
        }
    }
    state.components
}

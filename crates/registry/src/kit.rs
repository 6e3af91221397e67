//! The experiment kit: an experiment declared as data ([`Declaration`]), comma-list parameters
//! ([`List`]) and sweeps as values ([`Sweep`]). docs/architecture.md shows an experiment
//! written with it.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, RangeInclusive};

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::Deserialize;

use crate::{resolve_params, ExperimentError, ExperimentInfo, ParamSpec, Progress};

// ------------------------------------------------------------------------------ declarations

/// What `innet list` shows of an experiment and how its parameters resolve, as one value:
/// `const`/`static` tables of [`ParamSpec`]s (shared ones and the experiment's own),
/// concatenated in order, minus `omit`, with `defaults` changed and `redefine`d parameters
/// replaced in place, and the `--quick` values.
#[derive(Debug, Clone, Copy)]
pub struct Declaration {
    pub name: &'static str,
    pub description: &'static str,
    /// Parameter tables, concatenated in this order.
    pub params: &'static [&'static [ParamSpec]],
    /// Parameters of the tables this experiment does not take.
    pub omit: &'static [&'static str],
    /// Defaults this experiment changes (name, TOML literal); the name must be a parameter.
    pub defaults: &'static [(&'static str, &'static str)],
    /// Shared parameters that mean something else here: each replaces the parameter of its name
    /// where it stands (its default and doc), so the listing keeps the tables' order.
    pub redefine: &'static [ParamSpec],
    /// The `--quick` values (name, TOML literal).
    pub quick: &'static [(&'static str, &'static str)],
}

impl Declaration {
    /// An experiment taking `params` as they are, with no quick form.
    pub const fn new(name: &'static str, description: &'static str, params: &'static [&'static [ParamSpec]]) -> Declaration {
        Declaration { name, description, params, omit: &[], defaults: &[], redefine: &[], quick: &[] }
    }

    pub const fn quick(self, quick: &'static [(&'static str, &'static str)]) -> Declaration {
        Declaration { quick, ..self }
    }

    pub const fn defaults(self, defaults: &'static [(&'static str, &'static str)]) -> Declaration {
        Declaration { defaults, ..self }
    }

    pub const fn omit(self, omit: &'static [&'static str]) -> Declaration {
        Declaration { omit, ..self }
    }

    pub const fn redefine(self, redefine: &'static [ParamSpec]) -> Declaration {
        Declaration { redefine, ..self }
    }

    /// The parameters in order, with this experiment's redefinitions and defaults.
    pub fn params(&self) -> Vec<ParamSpec> {
        let mut v: Vec<ParamSpec> = self.params.iter().flat_map(|t| t.iter()).filter(|p| !self.omit.contains(&p.name)).cloned().collect();
        for r in self.redefine {
            let p = v.iter_mut().find(|p| p.name == r.name);
            debug_assert!(p.is_some(), "{}: redefines '{}', which is not a parameter", self.name, r.name);
            if let Some(p) = p {
                *p = r.clone();
            }
        }
        for &(name, default) in self.defaults {
            let p = v.iter_mut().find(|p| p.name == name);
            debug_assert!(p.is_some(), "{}: default for '{name}', which is not a parameter", self.name);
            if let Some(p) = p {
                p.default = default;
            }
        }
        v
    }

    pub fn info(&self) -> ExperimentInfo {
        ExperimentInfo { name: self.name, description: self.description, params: self.params() }
    }

    /// The typed parameters: defaults, then the quick values when `quick`, then `overrides`.
    pub fn resolve<T: DeserializeOwned>(&self, overrides: &BTreeMap<String, String>, quick: bool) -> Result<T, ExperimentError> {
        resolve_params(&self.info(), self.quick, quick, overrides)
    }
}

// ------------------------------------------------------------------------------ list parameters

/// One item of a comma-list parameter.
pub trait ListItem: Sized {
    /// Parse one item (trimmed, not empty); the error says what was expected ("a number").
    fn parse_item(item: &str) -> Result<Self, String>;
}

impl ListItem for f64 {
    fn parse_item(item: &str) -> Result<f64, String> {
        item.parse().map_err(|_| "a number".into())
    }
}

macro_rules! whole_item {
    ($($t:ty),*) => {$(
        impl ListItem for $t {
            fn parse_item(item: &str) -> Result<$t, String> {
                item.parse().map_err(|_| "a whole number".into())
            }
        }
    )*};
}
whole_item!(u16, u32, u64, usize);

impl ListItem for String {
    fn parse_item(item: &str) -> Result<String, String> {
        Ok(item.to_string())
    }
}

/// A comma-list parameter (default written `"0.1,0.5"`, set as `--set name=0.1,0.5`), parsed
/// when the parameters resolve: items trimmed, empty ones skipped, each a `T`. A bad item is
/// reported as [`ExperimentError::bad_param`] naming the parameter. The list may be empty; see
/// [`List::non_empty`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List<T>(pub Vec<T>);

impl<T> Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: Clone> List<T> {
    /// The items, or an error naming `name` when there are none.
    pub fn non_empty(&self, name: &str) -> Result<Vec<T>, ExperimentError> {
        if self.0.is_empty() {
            return Err(ExperimentError::bad_param(name, "", "at least one value"));
        }
        Ok(self.0.clone())
    }

    /// The items, or an error naming `name` when there are none or one is outside `range`
    /// (`expected` is what an item should be: `"a thread count in 1..=64"`).
    pub fn within(&self, name: &str, range: RangeInclusive<T>, expected: &str) -> Result<Vec<T>, ExperimentError>
    where
        T: PartialOrd + fmt::Display,
    {
        let v = self.non_empty(name)?;
        match v.iter().find(|x| !range.contains(x)) {
            Some(x) => Err(ExperimentError::bad_param(name, x, expected)),
            None => Ok(v),
        }
    }
}

/// The items of `text`, a comma list, each an `item`; Err(what was expected, the item).
fn items<T: ListItem>(text: &str) -> Result<Vec<T>, (String, String)> {
    text.split(',').map(str::trim).filter(|x| !x.is_empty()).map(|x| T::parse_item(x).map_err(|e| (e, x.to_string()))).collect()
}

/// A comma list that is not a resolved parameter (e.g. a [`Declaration`]'s own data), with the
/// same rules and error as [`List`].
pub fn parse_list<T: ListItem>(name: &str, text: &str) -> Result<Vec<T>, ExperimentError> {
    items(text).map_err(|(expected, item)| ExperimentError::bad_param(name, item, format!("each item to be {expected}")))
}

impl<'de, T: ListItem> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<List<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<T: ListItem> Visitor<'_> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a comma-separated list")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<List<T>, E> {
                // The resolver adds the parameter's name: `parameter 'x': expected …, got '…'`.
                items(s).map(List).map_err(|(expected, item)| E::custom(format!("expected each item to be {expected}, got '{item}'")))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

// ------------------------------------------------------------------------------ sweeps

/// A sweep as data: its points, the product of its axes (the first axis outermost), and
/// [`Sweep::run`] running one closure per point with progress over the whole set.
///
/// ```
/// use innet_registry::Sweep;
/// let s = Sweep::over(["a", "b"]).by(&[1, 2]);
/// assert_eq!(s.points, vec![("a", 1), ("a", 2), ("b", 1), ("b", 2)]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep<P> {
    pub points: Vec<P>,
}

impl<P> Sweep<P> {
    /// A sweep over one axis (or over points listed by hand, for a sweep that is not a product).
    pub fn over(axis: impl IntoIterator<Item = P>) -> Sweep<P> {
        Sweep { points: axis.into_iter().collect() }
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Every point of this sweep with every value of `axis` (this sweep outer).
    pub fn by<B: Clone>(self, axis: &[B]) -> Sweep<(P, B)>
    where
        P: Clone,
    {
        Sweep { points: self.points.into_iter().flat_map(|p| axis.iter().map(move |b| (p.clone(), b.clone()))).collect() }
    }

    /// `run` at every point in order, each given progress within its share; the results in order.
    /// The end of every point is reported too, so a point that reports nothing itself still
    /// moves the progress on.
    pub fn run<R>(&self, progress: Progress<'_>, mut run: impl FnMut(&P, Progress<'_>) -> Result<R, ExperimentError>) -> Result<Vec<R>, ExperimentError> {
        let n = self.points.len().max(1) as f64;
        let mut out = Vec::with_capacity(self.points.len());
        for (i, p) in self.points.iter().enumerate() {
            out.push(run(p, &mut |f| progress((i as f64 + f) / n))?);
            progress((i + 1) as f64 / n);
        }
        if self.points.is_empty() {
            progress(1.0);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARED: &[ParamSpec] = &[ParamSpec::new("load", "0.3", "load"), ParamSpec::new("seed", "1", "seed")];
    const OWN: &[ParamSpec] = &[ParamSpec::new("sizes", "\"64,1500\"", "sizes"), ParamSpec::new("modes", "\"a,b\"", "modes")];
    const DECL: Declaration = Declaration::new("t.x", "test", &[OWN, SHARED]).omit(&["seed"]).defaults(&[("load", "0.5")]).quick(&[("sizes", "\"64\"")]);

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        load: f64,
        sizes: List<u32>,
        modes: List<String>,
    }

    #[test]
    fn a_declaration_concatenates_omits_and_changes_defaults() {
        let names: Vec<&str> = DECL.params().iter().map(|p| p.name).collect();
        assert_eq!(names, ["sizes", "modes", "load"]);
        assert_eq!(DECL.params()[2].default, "0.5");
        let c: Cfg = DECL.resolve(&BTreeMap::new(), false).unwrap();
        assert_eq!((c.load, &c.sizes[..], &c.modes[..]), (0.5, &[64, 1500][..], &["a".to_string(), "b".to_string()][..]));
        let c: Cfg = DECL.resolve(&BTreeMap::new(), true).unwrap();
        assert_eq!(c.sizes.0, vec![64]);
    }

    #[test]
    fn a_redefined_parameter_keeps_its_place_with_its_own_default_and_doc() {
        const OTHER: Declaration = Declaration::new("t.y", "test", &[SHARED, OWN]).redefine(&[ParamSpec::new("load", "0.9", "load per workload")]);
        let p = OTHER.params();
        let names: Vec<&str> = p.iter().map(|p| p.name).collect();
        assert_eq!(names, ["load", "seed", "sizes", "modes"]);
        assert_eq!((p[0].default, p[0].doc), ("0.9", "load per workload"));
        assert_eq!(SHARED[0].doc, "load", "the shared table is not changed");
        let c: Cfg = OTHER.omit(&["seed"]).resolve(&BTreeMap::new(), false).unwrap();
        assert_eq!(c.load, 0.9);
    }

    #[test]
    fn list_items_are_trimmed_and_a_bad_one_names_the_parameter() {
        let set = |v: &str| BTreeMap::from([("sizes".to_string(), v.to_string())]);
        let c: Cfg = DECL.resolve(&set(" 1, 2 ,,3"), false).unwrap();
        assert_eq!(c.sizes.0, vec![1, 2, 3]);
        let e = DECL.resolve::<Cfg>(&set("1,big"), false).unwrap_err().to_string();
        assert_eq!(e, "parameter 'sizes': expected each item to be a whole number, got 'big'");
        let c: Cfg = DECL.resolve(&set(""), false).unwrap();
        assert!(c.sizes.non_empty("sizes").unwrap_err().to_string().contains("'sizes': expected at least one value"));
        let c: Cfg = DECL.resolve(&set("64,0,1500"), false).unwrap();
        let e = c.sizes.within("sizes", 1..=9000, "a frame size in 1..=9000").unwrap_err().to_string();
        assert_eq!(e, "parameter 'sizes': expected a frame size in 1..=9000, got '0'");
        assert_eq!(DECL.resolve::<Cfg>(&set("64,9000"), false).unwrap().sizes.within("sizes", 1..=9000, "").unwrap(), [64, 9000]);
        let e = parse_list::<f64>("cache_fractions", "0.1,x").unwrap_err().to_string();
        assert!(e.starts_with("parameter 'cache_fractions'") && e.contains("got 'x'"), "{e}");
    }

    #[test]
    fn a_sweep_is_the_product_of_its_axes_run_in_order_with_progress() {
        let s = Sweep::over(["a", "b"]).by(&[1u32, 2]).by(&[true]);
        assert_eq!(s.points, vec![(("a", 1), true), (("a", 2), true), (("b", 1), true), (("b", 2), true)]);
        let mut seen = Vec::new();
        let mut prog = |f: f64| seen.push(f);
        let out = s.run(&mut prog, |((x, n), _), p| {
            p(0.5);
            Ok(format!("{x}{n}"))
        });
        assert_eq!(out.unwrap(), ["a1", "a2", "b1", "b2"]);
        assert_eq!(seen, [0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0]);
        // A point that reports nothing still moves the progress on; an empty sweep ends at 1.
        for (points, want) in [(vec![1, 2], vec![0.5, 1.0]), (vec![], vec![1.0])] {
            let mut seen = Vec::new();
            Sweep::over(points).run(&mut |f| seen.push(f), |_, _| Ok(())).unwrap();
            assert_eq!(seen, want);
        }
        let err = s.run(&mut |_| {}, |_, _| Err::<(), _>(ExperimentError::Input("x".into())));
        assert!(err.is_err());
    }
}

//! Generates the machine's types and its `Machine` implementation.
//!
//! Everything the compiler must check against the user's code (the event types services emit,
//! the signatures of guards, actions, `init` and `output`, the self contract's version) is
//! written once, spanned on the user's token, so that each mistake is one error pointing at it.

use proc_macro2::{Group, Literal, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::chart::{Patches, Sink, walk};
use super::model::{Act, Custom, Grd, Init, InitForm, Kind, Model, Node, Target, Trans, Trig};
use super::signals;
use crate::shared::respan;

/// How exporters show a custom guard or action (`kind`: `"guard"` / `"action"`, `id`: its
/// `GuardId` / `ActionId`): the name given with `name = ...`, a function's path (`check`,
/// `Self::check`), or for an unnamed closure (or any other expression) the neutral
/// `<kind><id>`, which is what exporters show for an unnamed id. Source text never becomes a
/// label: closures span lines and hold `|`, quotes and `<>`.
fn display_name(kind: &str, id: usize, custom: &Custom) -> String {
    if let Some(name) = &custom.name {
        return name.unraw().to_string();
    }
    match &custom.expr {
        syn::Expr::Path(p) if p.qself.is_none() => {
            p.path.segments.iter().map(|s| s.ident.unraw().to_string()).collect::<Vec<_>>().join("::")
        }
        _ => format!("{kind}{id}"),
    }
}

/// `{ tokens }` with the braces spanned on `span`.
fn braces(tokens: TokenStream, span: Span) -> Group {
    let mut g = Group::new(proc_macro2::Delimiter::Brace, tokens);
    g.set_span(span);
    g
}

fn u32_lit(i: usize) -> Literal {
    Literal::u32_unsuffixed(u32::try_from(i).unwrap_or(u32::MAX))
}

fn u16_lit(i: usize) -> Literal {
    Literal::u16_unsuffixed(u16::try_from(i).unwrap_or(u16::MAX))
}

struct Names {
    machine: Ident,
    event: Ident,
    outbox: Ident,
    ctx: TokenStream,
}

/// The expansion. With `model.fingerprint == None` (the declaration has errors) the chart is
/// not built, but every type is still declared and every user function still checked, so that
/// code using the machine adds no error of its own.
pub(crate) fn expand(model: &Model) -> TokenStream {
    let machine = model.name.clone();
    let names = Names {
        event: format_ident!("{}Event", machine),
        outbox: format_ident!("{}Outbox", machine),
        ctx: match &model.context {
            Some(ty) => ty.to_token_stream(),
            None => quote!(::orchestrator::machine::__private::NoContext),
        },
        machine,
    };
    let mut out = TokenStream::new();
    out.extend(machine_struct(model));
    out.extend(event_enum(model, &names));
    out.extend(state_types(model));
    out.extend(outbox(model, &names));
    out.extend(inherent(model, &names));
    if let Some(contract) = &model.contract {
        out.extend(machine_impl(model, &names, contract));
        out.extend(checks(model, contract));
        out.extend(signals::expand_checks(model));
    }
    out
}

fn machine_struct(model: &Model) -> TokenStream {
    let Model { attrs, vis, name, .. } = model;
    let doc = format!(
        " Statechart `{name}` (declared with `machine!`): run it with `orchestrator::machine::MachineInstance<{name}>`."
    );
    quote_spanned! {name.span()=>
        #(#attrs)*
        #[doc = ""]
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        #vis struct #name;
    }
}

fn event_enum(model: &Model, n: &Names) -> TokenStream {
    let vis = &model.vis;
    let Names { machine, event, .. } = n;
    let mut variants = Vec::new();
    let mut names = Vec::new();
    let mut debug = Vec::new();
    if let Some(contract) = &model.contract {
        let doc =
            format!(" The init event (self contract `{}`): the machine's input.", contract.to_token_stream());
        let input = respan(&quote!(<#machine as ::orchestrator::machine::Machine>::Input), contract.span());
        variants.push(quote!(#[doc = #doc] Init(#input)));
        names.push(quote!(Self::Init(_) => ::orchestrator::machine::__private::init_type::<#machine>()));
        debug.push(quote!(Self::Init(p) => ::orchestrator::machine::__private::debug_payload(f, "Init", p)));
    }
    for (i, ev) in model.events.iter().enumerate() {
        let variant = &ev.variant;
        let payload = &ev.payload;
        let doc = if ev.signal {
            format!(" `{}`: signal `{}`.", payload.to_token_stream(), model.signals[ev.service].key)
        } else {
            format!(
                " `{}` emitted by service `{}`.",
                payload.to_token_stream(),
                model.services[ev.service].key
            )
        };
        let konst = format_ident!("__EVENT_{}", i);
        variants.push(quote!(#[doc = #doc] #variant(#payload)));
        names.push(quote!(Self::#variant(_) => #machine::#konst));
        let text = variant.to_string();
        debug.push(
            quote!(Self::#variant(p) => ::orchestrator::machine::__private::debug_payload(f, #text, p)),
        );
    }
    for s in &model.services {
        let variant = &s.error_variant;
        let ty = &s.ty;
        let doc = format!(" The system error (`sys.<type>.error`) of service `{}`.", s.key);
        variants.push(quote!(#[doc = #doc] #variant(::orchestrator::contract::SystemErrorPayload)));
        names.push(
            quote!(Self::#variant(_) => ::orchestrator::machine::__private::system_error_type::<#ty>()),
        );
        let text = variant.to_string();
        debug.push(
            quote!(Self::#variant(p) => ::orchestrator::machine::__private::debug_payload(f, #text, p)),
        );
    }
    let doc = format!(" The events machine [`{machine}`] reacts to, as its guards and actions see them.");
    let declaration = quote! {
        #[doc = #doc]
        #vis enum #event {
            #(#variants,)*
            /// An event known by its name only: raised and sent events, `done.state.*` events,
            /// `after` timers, and events of a service that no transition names.
            Internal(::std::sync::Arc<str>),
        }
    };
    let impls = quote! {
        impl ::orchestrator::machine::MachineEvent for #event {
            fn name(&self) -> &str {
                match self {
                    #(#names,)*
                    Self::Internal(name) => name,
                }
            }

            fn named(name: &str) -> Self {
                Self::Internal(::std::sync::Arc::from(name))
            }
        }

        impl ::std::fmt::Debug for #event {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self {
                    #(#debug,)*
                    Self::Internal(name) => f.debug_tuple("Internal").field(name).finish(),
                }
            }
        }
    };
    // The impls name the self contract's init payload: spanned on the contract, so that a
    // contract that is not an orchestrator contract is reported there, once.
    let impls = match &model.contract {
        Some(contract) => respan(&impls, contract.span()),
        None => impls,
    };
    quote!(#declaration #impls)
}

/// One type per compound / parallel state (and per parallel region): an enum of the active
/// child, a struct of the regions, a unit struct for an atomic region.
fn state_types(model: &Model) -> TokenStream {
    let vis = &model.vis;
    let mut out = TokenStream::new();
    for (i, node) in model.nodes.iter().enumerate() {
        let Some(ty) = &node.ty else { continue };
        let what =
            if i == 0 { format!("machine `{}`", model.name) } else { format!("state `{}`", node.path) };
        let real = typed_children(model, node);
        let derive = quote!(#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]);
        if node.kind == Kind::Parallel {
            let doc = format!(" The active configuration of parallel {what}: one field per region.");
            let fields = real.iter().map(|c| {
                let child = &model.nodes[*c];
                let key = child.key.as_ref().map(|k| k.to_token_stream()).unwrap_or_default();
                let doc = format!(" Region `{}`.", child.path);
                let cty = child.ty.as_ref().map(|t| t.to_token_stream()).unwrap_or_else(|| quote!(()));
                quote!(#[doc = #doc] pub #key: #cty)
            });
            out.extend(quote! { #[doc = #doc] #derive #vis struct #ty { #(#fields,)* } });
        } else if !real.is_empty() {
            let doc = format!(" The active child of {what}.");
            let variants = real.iter().map(|c| {
                let child = &model.nodes[*c];
                let variant = &child.variant;
                let doc = format!(" In state `{}`.", child.path);
                match &child.ty {
                    Some(cty) => quote!(#[doc = #doc] #variant(#cty)),
                    None => quote!(#[doc = #doc] #variant),
                }
            });
            out.extend(quote! { #[doc = #doc] #derive #vis enum #ty { #(#variants,)* } });
        } else {
            let doc = format!(" In {what} (an atomic region).");
            out.extend(quote! { #[doc = #doc] #derive #vis struct #ty; });
        }
    }
    out
}

/// The children of `node` that appear in the typed state: not history states, and with a
/// variant.
fn typed_children(model: &Model, node: &Node) -> Vec<usize> {
    node.children
        .iter()
        .copied()
        .filter(|c| !matches!(model.nodes[*c].kind, Kind::History { .. }))
        .filter(|c| model.nodes[*c].variant.is_some())
        .collect()
}

fn state_of(model: &Model) -> TokenStream {
    let mut fns = TokenStream::new();
    for (i, node) in model.nodes.iter().enumerate() {
        let Some(ty) = &node.ty else { continue };
        let f = format_ident!("__state_{}", i);
        let real = typed_children(model, node);
        let body = if node.kind == Kind::Parallel {
            let fields = real.iter().map(|c| {
                let key = model.nodes[*c].key.as_ref().map(|k| k.to_token_stream()).unwrap_or_default();
                let cf = format_ident!("__state_{}", c);
                quote!(#key: #cf(active)?)
            });
            quote!(::std::option::Option::Some(#ty { #(#fields,)* }))
        } else if !real.is_empty() {
            let arms = real.iter().map(|c| {
                let child = &model.nodes[*c];
                let id = u16_lit(*c);
                let variant = &child.variant;
                let value = match &child.ty {
                    Some(_) => {
                        let cf = format_ident!("__state_{}", c);
                        quote!(#ty::#variant(#cf(active)?))
                    }
                    None => quote!(#ty::#variant),
                };
                quote! {
                    if active.contains(::orchestrator::machine::__private::chart::StateId(#id)) {
                        return ::std::option::Option::Some(#value);
                    }
                }
            });
            quote!(#(#arms)* ::std::option::Option::None)
        } else {
            quote!(::std::option::Option::Some(#ty))
        };
        fns.extend(quote! {
            fn #f(active: &::orchestrator::machine::__private::chart::StateSet) -> ::std::option::Option<#ty> {
                #body
            }
        });
    }
    fns
}

fn outbox(model: &Model, n: &Names) -> TokenStream {
    let vis = &model.vis;
    let Names { machine, outbox, .. } = n;
    let methods = model.services.iter().map(|s| {
        let key = &s.key;
        let ty = &s.ty;
        let text = syn::ext::IdentExt::unraw(key).to_string();
        let doc = format!(
            " Emits a request to service `{text}` (`{}`): the payload it accepts (for an orchestrator contract, its init payload; the child gets this workflow's subject as parent).",
            ty.to_token_stream()
        );
        quote_spanned! {key.span()=>
            #[doc = #doc]
            pub fn #key<P, K>(&mut self, payload: P)
            where
                #ty: ::orchestrator::machine::ServiceRequestInput<P, K>,
            {
                self.inner.push::<#ty, P, K>(#text, payload)
            }
        }
    });
    let notifications = signals::expand_outbox(model);
    let doc =
        format!(" What the actions of machine [`{machine}`] emit through: one method per declared service.");
    // Spanned on `services`, where a note about the bound points.
    let request = quote_spanned! {model.services_span=>
        /// Emits a request to a declared service, named by its contract version type
        /// (`out.request(AddV1, payload)`).
        pub fn request<V, P, K>(&mut self, service: V, payload: P)
        where
            V: ::orchestrator::machine::ServiceOf<#machine> + ::orchestrator::machine::ServiceRequestInput<P, K>,
        {
            let _ = service;
            self.inner.push::<V, P, K>(<V as ::orchestrator::machine::ServiceOf<#machine>>::SERVICE, payload)
        }

        /// Emits a request to a declared service with [`RequestOptions`](::orchestrator::machine::RequestOptions)
        /// (event id, `to`, `redirectto`, access control, execution units, domains).
        pub fn request_with<V, P, K>(
            &mut self,
            service: V,
            payload: P,
            options: ::orchestrator::machine::RequestOptions,
        ) where
            V: ::orchestrator::machine::ServiceOf<#machine> + ::orchestrator::machine::ServiceRequestInput<P, K>,
        {
            let _ = service;
            self.inner.push_with::<V, P, K>(
                <V as ::orchestrator::machine::ServiceOf<#machine>>::SERVICE,
                payload,
                options,
            )
        }
    };
    quote! {
        #[doc = #doc]
        #vis struct #outbox<'a> {
            inner: &'a mut ::orchestrator::machine::Requests,
        }

        impl #outbox<'_> {
            #(#methods)*

            #request
            #notifications
            /// The subject of the running workflow, if known.
            pub fn subject(&self) -> ::std::option::Option<&str> {
                self.inner.subject()
            }

            /// The requests emitted so far in this step.
            pub fn requests(&self) -> &[::orchestrator::machine::ServiceRequest] {
                self.inner.requests()
            }
        }
    }
}

fn inherent(model: &Model, n: &Names) -> TokenStream {
    let machine = &n.machine;
    let consts = model.events.iter().enumerate().map(|(i, ev)| {
        if let Some(konst) = signals::event_const(model, i) {
            return konst;
        }
        let konst = format_ident!("__EVENT_{}", i);
        let span = ev.payload.span();
        let svc = respan(&model.services[ev.service].ty, span);
        let payload = &ev.payload;
        quote_spanned! {span=>
            #[doc(hidden)]
            pub const #konst: &'static str = <#svc as ::orchestrator::contract::Emits<#payload>>::EVENT_TYPE;
        }
    });
    let api = model.contract.as_ref().map(|_| {
        quote! {
            /// The chart (built once), for exporters and tools.
            pub fn chart() -> &'static ::orchestrator::machine::Chart {
                <Self as ::orchestrator::machine::Machine>::chart()
            }

            /// The names of the custom guards and actions, for the chart exporters.
            pub fn names() -> ::orchestrator::machine::chart::export::NameTable {
                <Self as ::orchestrator::machine::Machine>::names()
            }

            /// The self contract and the service contracts as JSON Schema documents.
            pub fn contracts_json() -> ::orchestrator::__private::serde_json::Value {
                <Self as ::orchestrator::machine::Machine>::contracts_json()
            }
        }
    });
    quote! {
        impl #machine {
            #(#consts)*
            #api
        }
    }
}

fn machine_impl(model: &Model, n: &Names, contract: &Type) -> TokenStream {
    let Names { machine, event, outbox, ctx } = n;
    let state_ty = &model.nodes[0].ty;
    let name_text = machine.to_string();
    let ov = quote!(::orchestrator::contract::OrchestratorVersion);
    let contract_span = contract.span();
    // The self contract's payload types are named once, in the `Machine` impl, and through it
    // everywhere else: a contract that is not an orchestrator contract is one error.
    let init_ty = respan(&quote!(<#machine as ::orchestrator::machine::Machine>::Input), contract_span);
    let complete_ty = respan(&quote!(<#machine as ::orchestrator::machine::Machine>::Output), contract_span);
    let contract_tokens = respan(contract, contract_span);

    let chart_body = match model.fingerprint {
        Some(fingerprint) => {
            let fingerprint = Literal::u64_unsuffixed(fingerprint);
            let mut sink = TokenSink { model, out: TokenStream::new() };
            walk(model, &Patches::default(), &mut sink);
            let ops = sink.out;
            quote! {
                static CHART: ::orchestrator::machine::__private::LazyLock<::orchestrator::machine::Chart> =
                    ::orchestrator::machine::__private::LazyLock::new(|| {
                        use ::orchestrator::machine::__private::chart as __c;
                        let build = || -> ::std::result::Result<__c::Chart, __c::BuildError> {
                            let mut __b = __c::ChartBuilder::new(#name_text);
                            #ops
                            __b.build()
                        };
                        ::orchestrator::machine::__private::finish_chart(#name_text, #fingerprint, build())
                    });
                &CHART
            }
        }
        None => quote!(::std::panic!("machine `{}` did not compile", #name_text)),
    };

    let services = model.services.iter().map(|s| {
        let ty = &s.ty;
        let text = syn::ext::IdentExt::unraw(&s.key).to_string();
        let retry = super::retry::expand(s.retry.as_ref());
        quote!(::orchestrator::machine::ServiceInfo::of::<#ty>(#text) #retry)
    });

    // Each user function is ascribed its type, spanned on the user's expression: a wrong
    // signature is one error pointing at it.
    let init = match &model.init {
        Some(Init { expr, form: InitForm::Input }) => {
            let ty = respan(&quote!(fn(&#init_ty) -> #ctx), expr.span());
            quote_spanned!(expr.span()=> let _ = meta; let __init: #ty = #expr; __init(input))
        }
        Some(Init { expr, form: InitForm::InputMeta }) => {
            let ty = respan(&quote!(fn(&#init_ty, &::orchestrator::machine::InitMeta) -> #ctx), expr.span());
            quote_spanned!(expr.span()=> let __init: #ty = #expr; __init(input, meta))
        }
        // Reported: the closure is not checked against a signature it cannot have.
        Some(Init { form: InitForm::Invalid, .. }) => {
            quote!(let _ = (input, meta); ::std::unreachable!("`init` did not compile"))
        }
        None => {
            let span = model.context.as_ref().map_or(model.name.span(), |c| c.span());
            let ty = respan(&quote!(fn(&#init_ty) -> #ctx), span);
            let default = respan(&quote!(<#ctx as ::std::default::Default>::default()), span);
            quote_spanned!(span=> let _ = meta; let __init: #ty = |_| #default; __init(input))
        }
    };
    let output = model.output.as_ref().map(|expr| {
        // The return type is inferred: the payload, or a `Completion` of it.
        let ty = respan(&quote!(fn(&#ctx) -> _), expr.span());
        let into = respan(
            &quote!(::orchestrator::machine::IntoCompletion::<#complete_ty>::into_completion),
            expr.span(),
        );
        quote_spanned! {expr.span()=>
            let __output: #ty = #expr;
            #into(__output(context))
        }
    });
    let output = output.unwrap_or_else(|| quote!(::std::panic!("machine `{}` has no output", #name_text)));

    let decode_services = model.services.iter().enumerate().map(|(si, s)| {
        let ty = &s.ty;
        let err = &s.error_variant;
        let events = model.events.iter().enumerate().filter(|(_, e)| !e.signal && e.service == si).map(|(i, e)| {
            let konst = format_ident!("__EVENT_{}", i);
            let variant = &e.variant;
            let payload = &e.payload;
            quote! {
                if __t == #machine::#konst {
                    return ::orchestrator::machine::__private::decode_payload::<#ty, #payload>(event).map(#event::#variant);
                }
            }
        });
        quote! {
            if ::orchestrator::machine::__private::is_from::<#ty>(event) {
                #(#events)*
                if __t == ::orchestrator::machine::__private::system_error_type::<#ty>() {
                    return ::orchestrator::machine::__private::decode_payload::<#ty, ::orchestrator::contract::SystemErrorPayload>(event)
                        .map(#event::#err);
                }
                if let ::std::option::Option::Some(r) = ::orchestrator::machine::__private::other_emitted::<#ty>(event) {
                    return r.map(|()| #event::Internal(::std::sync::Arc::from(__t)));
                }
            }
        }
    });

    let guards = model.guards.iter().enumerate().map(|(i, Custom { expr, .. })| {
        let id = u32_lit(i);
        // The return type is inferred: `bool` or `Result<bool, E>`.
        let ty = respan(&quote!(fn(&#ctx, &#event) -> _), expr.span());
        let call = quote_spanned! {expr.span()=>
            let __guard: #ty = #expr;
            ::orchestrator::machine::IntoGuardResult::into_guard_result(__guard(context, event))
        };
        quote!(#id => { #call })
    });
    let actions = model.actions.iter().enumerate().map(|(i, Custom { expr, .. })| {
        let id = u32_lit(i);
        // The return type is inferred: `()` or `Result<(), E>`.
        let ty = respan(&quote!(fn(&mut #ctx, &#event, &mut #outbox<'_>) -> _), expr.span());
        let call = quote_spanned! {expr.span()=>
            let __action: #ty = #expr;
            ::orchestrator::machine::IntoActionResult::into_action_result(__action(context, event, &mut __out))
        };
        quote!(#id => { #call })
    });
    // A closure is ascribed `fn(&Context) -> Duration` (so that its parameter's type is known);
    // any other expression (a function, a `Duration` or a `u64` of ms) goes through `AfterDelay`.
    let delays = model.delays.iter().enumerate().map(|(i, Custom { expr, .. })| {
        let id = u32_lit(i);
        let call = if matches!(expr, syn::Expr::Closure(_)) {
            let ty = respan(&quote!(fn(&#ctx) -> ::std::time::Duration), expr.span());
            quote_spanned! {expr.span()=>
                let __delay: #ty = #expr;
                ::orchestrator::machine::__private::duration_ms(__delay(context))
            }
        } else {
            quote_spanned! {expr.span()=>
                ::orchestrator::machine::__private::AfterDelay::<#ctx>::delay_ms(&#expr, context)
            }
        };
        quote!(#id => { #call })
    });
    let delay_body = if model.delays.is_empty() {
        quote!(let _ = (id, context); 0)
    } else {
        quote! {
            match id.0 {
                #(#delays)*
                _ => 0,
            }
        }
    };
    let action_body = if model.actions.is_empty() {
        quote!(let _ = (id, context, event, outbox); ::std::result::Result::Ok(()))
    } else {
        quote! {
            let mut __out = #outbox { inner: outbox };
            match id.0 {
                #(#actions)*
                _ => ::std::result::Result::Ok(()),
            }
        }
    };
    let guard_body = if model.guards.is_empty() {
        quote!(let _ = (id, context, event); ::std::result::Result::Ok(false))
    } else {
        quote! {
            match id.0 {
                #(#guards)*
                _ => ::std::result::Result::Ok(false),
            }
        }
    };
    let state_fns = state_of(model);
    let guard_names = model.guards.iter().enumerate().map(|(i, g)| display_name("guard", i, g));
    let action_names = model.actions.iter().enumerate().map(|(i, a)| display_name("action", i, a));
    let declares = model.services.iter().map(|s| {
        let ty = &s.ty;
        let text = syn::ext::IdentExt::unraw(&s.key).to_string();
        quote_spanned! {ty.span()=>
            impl ::orchestrator::machine::ServiceOf<#machine> for #ty {
                const SERVICE: &'static str = #text;
            }
        }
    });
    // Code naming the self contract's payload types, spanned on the contract.
    let decode_init = respan(
        &quote! {
            if ::orchestrator::machine::__private::is_init::<Self>(event) {
                return ::orchestrator::machine::__private::decode_init::<Self>(event).map(#event::Init);
            }
        },
        contract_span,
    );
    let init_event = respan(&quote!(#event::Init(input)), contract_span);
    let event_assoc = respan(&quote!(type Event = #event;), contract_span);
    let init_sig = respan(
        &quote!(fn init(input: &#init_ty, meta: &::orchestrator::machine::InitMeta) -> #ctx),
        contract_span,
    );
    let output_sig = respan(
        &quote!(fn completion(context: &#ctx) -> ::orchestrator::machine::Completion<#complete_ty>),
        contract_span,
    );
    let init_event_sig = respan(&quote!(fn init_event(input: #init_ty) -> #event), contract_span);
    let decode_sig = respan(
        &quote! {
            fn decode(
                event: &::orchestrator::event::Event,
            ) -> ::std::result::Result<#event, ::orchestrator::violation::Violation>
        },
        contract_span,
    );
    let contract_assoc = quote_spanned! {contract_span=>
        type Contract = #contract_tokens;
        type Input = <#contract_tokens as #ov>::Init;
        type Output = <#contract_tokens as #ov>::Complete;
    };
    let ctx_assoc = match &model.context {
        Some(ty) => quote_spanned!(ty.span()=> type Context = #ty;),
        None => quote!(
            type Context = ::orchestrator::machine::__private::NoContext;
        ),
    };

    let decode_signals = signals::expand_decode(model, event);
    let decode_body = respan(
        &quote! {{
            let __t = event.r#type();
            #decode_init
            #decode_signals
            #(#decode_services)*
            ::std::result::Result::Err(::orchestrator::machine::__private::unresolved::<#machine>(#name_text, event))
        }},
        contract_span,
    );
    let signal_infos = signals::expand_infos(model);
    let impl_header = quote_spanned!(contract_span=> impl ::orchestrator::machine::Machine for #machine);
    let init_block = braces(init, contract_span);
    let output_block = braces(output, contract_span);
    let init_event_block = braces(init_event, contract_span);
    // The impl's braces are spanned on the contract too: the impl as a whole is where an
    // unsatisfied bound of `Machine::Contract` is reported.
    let impl_body = braces(
        quote! {
                #contract_assoc
                #ctx_assoc
                #event_assoc
                type State = #state_ty;

                const NAME: &'static str = #name_text;

                fn chart() -> &'static ::orchestrator::machine::Chart {
                    #chart_body
                }

                fn services() -> ::std::vec::Vec<::orchestrator::machine::ServiceInfo> {
                    ::std::vec![#(#services),*]
                }

                #signal_infos

                fn guard_names() -> &'static [&'static str] {
                    &[#(#guard_names),*]
                }

                fn action_names() -> &'static [&'static str] {
                    &[#(#action_names),*]
                }

                #init_sig #init_block

                #output_sig #output_block

                #init_event_sig #init_event_block

                #decode_sig #decode_body

                fn delay(
                    id: ::orchestrator::machine::__private::chart::DelayId,
                    context: &#ctx,
                ) -> u64 {
                    #delay_body
                }

                fn guard(
                    id: ::orchestrator::machine::__private::chart::GuardId,
                    context: &#ctx,
                    event: &#event,
                ) -> ::std::result::Result<bool, ::orchestrator::machine::ActionError> {
                    #guard_body
                }

                fn action(
                    id: ::orchestrator::machine::__private::chart::ActionId,
                    context: &mut #ctx,
                    event: &#event,
                    outbox: &mut ::orchestrator::machine::Requests,
                ) -> ::std::result::Result<(), ::orchestrator::machine::ActionError> {
                    #action_body
                }

                fn state_of(
                    active: &::orchestrator::machine::__private::chart::StateSet,
                ) -> ::std::option::Option<#state_ty> {
                    #state_fns
                    __state_0(active)
                }
        },
        contract_span,
    );
    quote! {
        #impl_header #impl_body

        #(#declares)*
    }
}

/// Compile-time checks of facts only the compiler knows: the self contract's version, and that
/// no two contracts (self and services) share a URI.
fn checks(model: &Model, contract: &Type) -> TokenStream {
    let cv = quote!(::orchestrator::contract::ContractVersion);
    let str_eq = quote!(::orchestrator::machine::__private::str_eq);
    let mut out = TokenStream::new();
    if let Some(version) = &model.version {
        let message = format!(
            "the `version` of machine `{}` ({:?}) is not the version of its self contract `{}`",
            model.name,
            version.value(),
            contract.to_token_stream()
        );
        let span = version.span();
        let contract = respan(contract, span);
        out.extend(quote_spanned! {span=>
            const _: () = if !#str_eq(<#contract as #cv>::VERSION, #version) {
                ::std::panic!(#message)
            };
        });
    }
    for (i, s) in model.services.iter().enumerate() {
        let span = s.ty.span();
        let ty = respan(&s.ty, span);
        let message =
            format!("service `{}` is the machine's own contract; a machine cannot call itself", s.key);
        let me = respan(contract, span);
        out.extend(quote_spanned! {span=>
            const _: () = if #str_eq(<#me as #cv>::URI, <#ty as #cv>::URI) {
                ::std::panic!(#message)
            };
        });
        for earlier in &model.services[..i] {
            let other = respan(&earlier.ty, span);
            let message = format!(
                "services `{}` and `{}` have the same contract URI; declare each contract once",
                earlier.key, s.key
            );
            out.extend(quote_spanned! {span=>
                const _: () = if #str_eq(<#other as #cv>::URI, <#ty as #cv>::URI) {
                    ::std::panic!(#message)
                };
            });
        }
    }
    out
}

/// Turns the builder operations into statements of the generated chart function.
struct TokenSink<'m> {
    model: &'m Model,
    out: TokenStream,
}

fn node_var(idx: usize) -> Ident {
    format_ident!("__s{}", idx)
}

fn action_tokens(a: &Act) -> TokenStream {
    match a {
        Act::Raise(event) => quote!(__c::ActionSpec::raise(#event)),
        Act::Send { event, delay: None, id: None } => quote!(__c::ActionSpec::send(#event)),
        Act::Send { event, delay, id } => {
            let delay = Literal::u64_unsuffixed(delay.unwrap_or(0));
            let id = match id {
                Some(id) => quote!(::std::option::Option::Some(#id)),
                None => quote!(::std::option::Option::None),
            };
            quote!(__c::ActionSpec::send_delayed(#event, #delay, #id))
        }
        Act::Cancel(id) => quote!(__c::ActionSpec::cancel(#id)),
        Act::Custom(i) => {
            let i = u32_lit(*i);
            quote!(__c::ActionSpec::custom(__c::ActionId(#i)))
        }
    }
}

fn paths(targets: &[&Target]) -> TokenStream {
    let n = targets.len();
    let paths = targets.iter().map(|t| &t.path);
    quote!(<[&str; #n]>::from([#(#paths),*]))
}

impl Sink for TokenSink<'_> {
    type Node = usize;

    fn root(&mut self) -> usize {
        self.out.extend(quote!(let __s0 = __b.root();));
        0
    }

    fn root_parallel(&mut self) {
        self.out.extend(quote!(__b.set_root_parallel();));
    }

    fn add_state(&mut self, parent: usize, idx: usize, key: &str, kind: Kind) -> Option<usize> {
        let (p, v) = (node_var(parent), node_var(idx));
        let kind = match kind {
            Kind::State => quote!(__c::NodeKind::State),
            Kind::Parallel => quote!(__c::NodeKind::Parallel),
            Kind::Final => quote!(__c::NodeKind::Final),
            Kind::History { deep } => quote!(__c::NodeKind::History { deep: #deep }),
        };
        self.out.extend(quote!(let #v = __b.add_state(#p, #key, #kind)?;));
        Some(idx)
    }

    fn set_initial(&mut self, node: usize, _: usize, targets: &[&Target]) {
        let (v, t) = (node_var(node), paths(targets));
        self.out.extend(quote!(__b.set_initial(#v, #t, ::std::vec::Vec::new())?;));
    }

    fn set_history_default(&mut self, node: usize, _: usize, targets: &[&Target], actions: &[Act]) {
        let (v, t) = (node_var(node), paths(targets));
        let actions = actions.iter().map(action_tokens);
        self.out.extend(quote!(__b.set_history_default(#v, #t, ::std::vec![#(#actions),*])?;));
    }

    fn add_entry(&mut self, node: usize, _: usize, action: &Act) {
        let (v, a) = (node_var(node), action_tokens(action));
        self.out.extend(quote!(__b.add_entry(#v, #a)?;));
    }

    fn add_exit(&mut self, node: usize, _: usize, action: &Act) {
        let (v, a) = (node_var(node), action_tokens(action));
        self.out.extend(quote!(__b.add_exit(#v, #a)?;));
    }

    fn add_transition(
        &mut self,
        node: usize,
        _: usize,
        _: usize,
        trans: &Trans,
        targets: &[&Target],
        guard: Option<&Grd>,
    ) {
        let machine = &self.model.name;
        let v = node_var(node);
        let mut spec = match &trans.trig {
            Trig::Named(lit) => quote!(__c::TransitionSpec::on(#lit)),
            Trig::Service(i) => {
                let konst = format_ident!("__EVENT_{}", i);
                quote!(__c::TransitionSpec::on(#machine::#konst))
            }
            Trig::ServiceError(i) => {
                let ty = &self.model.services[*i].ty;
                quote!(__c::TransitionSpec::on(::orchestrator::machine::__private::system_error_type::<#ty>()))
            }
            // Only reached with errors, when no chart is generated.
            Trig::Invalid => quote!(__c::TransitionSpec::on("machine.invalid")),
            Trig::Done => quote!(__c::TransitionSpec::on_done()),
            Trig::Always => quote!(__c::TransitionSpec::always()),
            Trig::After(ms) => {
                let ms = Literal::u64_unsuffixed(*ms);
                quote!(__c::TransitionSpec::after(#ms))
            }
            Trig::AfterComputed(i) => {
                let name = self.model.delays[*i].delay_name(*i);
                let i = u32_lit(*i);
                quote!(__c::TransitionSpec::after_computed(__c::DelayId(#i), #name))
            }
        };
        for t in targets {
            let path = &t.path;
            spec.extend(quote!(.target(#path)));
        }
        if let Some(g) = guard {
            let g = match g {
                Grd::In(t) => {
                    let path = &t.path;
                    quote!(__c::GuardSpec::In(::std::string::String::from(#path)))
                }
                Grd::NotIn(t) => {
                    let path = &t.path;
                    quote!(__c::GuardSpec::NotIn(::std::string::String::from(#path)))
                }
                Grd::Custom(i) => {
                    let i = u32_lit(*i);
                    quote!(__c::GuardSpec::Custom(__c::GuardId(#i)))
                }
            };
            spec.extend(quote!(.guard(#g)));
        }
        for a in &trans.actions {
            let a = action_tokens(a);
            spec.extend(quote!(.action(#a)));
        }
        if trans.reenter {
            spec.extend(quote!(.reenter(true)));
        }
        self.out.extend(quote!(__b.add_transition(#v, #spec)?;));
    }
}
